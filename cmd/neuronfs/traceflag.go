package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// traceFlag is --exec-trace FILE: absolute once set, so run's namespace
// child writes where the user's working directory said.
type traceFlag struct{ path string }

func (f *traceFlag) String() string { return f.path }
func (f *traceFlag) Set(v string) error {
	if v == "" {
		f.path = ""
		return nil
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return fmt.Errorf("exec trace file %q: %w", v, err)
	}
	f.path = abs
	return nil
}

const execTraceUsage = "write what the engines and DMA queues do to FILE as Chrome/Perfetto trace events (JSON, complete when the daemon stops; see docs/tracing.md)"

// check finds a trace file that cannot be made, before anything starts.
func (f *traceFlag) check() error {
	if f.path == "" {
		return nil
	}
	dir := filepath.Dir(f.path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--exec-trace %s: no directory %s", f.path, dir)
	}
	if st, err := os.Stat(f.path); err == nil && st.IsDir() {
		return fmt.Errorf("--exec-trace %s: a directory, want a file", f.path)
	}
	return nil
}
