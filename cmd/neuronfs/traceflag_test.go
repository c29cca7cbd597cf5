package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// --exec-trace is made absolute where it is parsed and handed on to run's
// namespace child unchanged, so the child writes where the user meant.
func TestExecTraceFlagAbsolute(t *testing.T) {
	var h hostFlags
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	h.register(fs)
	if err := fs.Parse([]string{"--exec-trace", "out/exec.json"}); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, "out/exec.json")
	if h.execTrace.path != want {
		t.Errorf("--exec-trace out/exec.json is %q, want %q", h.execTrace.path, want)
	}
	if !slices.Contains(relayArgs(fs, new(hostFlags).register), "--exec-trace="+want) {
		t.Errorf("args %q do not pass --exec-trace on", relayArgs(fs, new(hostFlags).register))
	}
	var child hostFlags
	cfs := flag.NewFlagSet("child", flag.ContinueOnError)
	cfs.SetOutput(io.Discard)
	child.register(cfs)
	if err := cfs.Parse(relayArgs(fs, new(hostFlags).register)); err != nil {
		t.Fatal(err)
	}
	if child.execTrace.path != want {
		t.Errorf("the child reads --exec-trace %q, want %q", child.execTrace.path, want)
	}
}
