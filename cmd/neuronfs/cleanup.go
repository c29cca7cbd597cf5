package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
)

// cmdCleanup undoes what a killed host-mode daemon left (from its state
// file) and detaches every neuronfs FUSE mount whose daemon is gone.
func cmdCleanup(args []string) int {
	fl := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	stateDir := fl.String("state-dir", "/run/neuronfs", "the state directory of 'mount --host'")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if fl.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: neuronfs cleanup [--state-dir DIR]")
		return exitUsage
	}
	if os.Geteuid() != 0 {
		return failLine("cleanup", errNotRoot)
	}
	var errs []error
	st, err := loadHostState(*stateDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		errs = append(errs, err)
	case st.alive():
		return failLine("cleanup", fmt.Errorf("the host mount of pid %d is running; stop it with SIGTERM, it undoes its own binds", st.PID))
	default:
		if err := st.undo(); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Printf("undid the host mount of pid %d (%d changes)\n", st.PID, len(st.Changes))
		}
	}
	mounts, err := readMounts()
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range mounts {
		if !m.neuronfs() {
			continue
		}
		if !fuseDead(m.point, 2*time.Second) {
			continue
		}
		if err := detachDeadMount(mounts, m.point); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Printf("detached the dead mount %s\n", m.point)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return failLine("cleanup", err)
	}
	return exitOK
}

// detachDeadMount aborts and detaches the neuronfs FUSE mount at point
// (whose daemon is known to be gone), if that is what is mounted there.
// Aborting first ends any request a dying daemon left waiting, which
// would otherwise keep it alive.
func detachDeadMount(mounts []mountEntry, point string) error {
	m, ok := topMountAt(mounts, point)
	if !ok || !m.neuronfs() {
		return nil
	}
	if err := fs.AbortConnection(fs.KernelDev(m.major, m.minor)); err != nil {
		return err
	}
	if err := unix.Unmount(point, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
		return fmt.Errorf("unmount %s: %w", point, err)
	}
	return nil
}
