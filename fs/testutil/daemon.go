package testutil

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
)

// Daemon is an in-process mount that a test may find wedged (a deadlock
// in the daemon): Wedge releases every caller and makes the cleanup leave
// the stuck daemon alone instead of hanging the test binary on it.
type Daemon struct {
	Dir    string
	Sys    *device.System
	FS     *fs.FS
	wedged atomic.Bool
}

// StartDaemon mounts a fresh emulated host under a temporary directory
// and unmounts it when the test ends.
func StartDaemon(t testing.TB, cfg device.Config) *Daemon {
	t.Helper()
	return StartDaemonOptions(t, cfg, fs.Options{})
}

// StartDaemonOptions is StartDaemon with mount options.
func StartDaemonOptions(t testing.TB, cfg device.Config, opts fs.Options) *Daemon {
	t.Helper()
	RequireFUSE(t)
	if cfg.Major == 0 {
		cfg.Major = 244
	}
	if env := os.Getenv(device.BackingEnv); env != "" && cfg.Backing == (device.Backing{}) {
		b, err := device.ParseBacking(env)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Backing = b
	}
	sys, err := device.NewSystem(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := fs.Mount(sys, dir, opts)
	if err != nil {
		sys.Close()
		t.Fatal(err)
	}
	d := &Daemon{Dir: dir, Sys: sys, FS: f}
	GuardMount(t, dir)
	t.Cleanup(func() {
		if d.wedged.Load() {
			// Goroutines of the daemon hold its locks for good: waiting
			// for serving to end or closing the system would never
			// return. Detach the mount and leave the rest to exit.
			done := make(chan struct{})
			go func() { f.Unmount(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Log("wedged daemon: unmount did not finish; left to process exit")
			}
			return
		}
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		f.Abort()
		sys.Close()
	})
	return d
}

// Wedge aborts the FUSE connection (every waiting caller gets ENOTCONN,
// callers stuck in an uninterruptible flush are released) and marks the
// daemon as wedged for the cleanup.
func (d *Daemon) Wedge() error {
	d.wedged.Store(true)
	return d.FS.Abort()
}

// Wedged reports whether Wedge was called.
func (d *Daemon) Wedged() bool { return d.wedged.Load() }
