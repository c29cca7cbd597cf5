package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
)

// cmdCleanup undoes what a killed host-mode daemon left (from its state
// file) and detaches every neuronfs FUSE mount whose daemon is gone.
func cmdCleanup(args []string) int {
	fl := newFlagSet("cleanup")
	stateDir := fl.String("state-dir", "/run/neuronfs", "the state directory of 'mount --host'")
	if status, ok := parseFlags("cleanup", fl, args); !ok {
		return status
	}
	if fl.NArg() != 0 {
		return usageLine("cleanup", fmt.Sprintf("unexpected argument %q", fl.Arg(0)))
	}
	if os.Geteuid() != 0 {
		return failLine("cleanup", errNotRoot)
	}
	var errs []error
	if err := cleanupHost(*stateDir); errors.Is(err, errHostRunning) {
		return failLine("cleanup", err)
	} else if err != nil {
		errs = append(errs, err)
	}
	mounts, err := readMounts()
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range mounts {
		if !m.neuronfs() {
			continue
		}
		if detached, err := detachDeadMount(m.point, 2*time.Second); err != nil {
			errs = append(errs, err)
		} else if detached {
			fmt.Printf("detached the dead mount %s\n", m.point)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return failLine("cleanup", err)
	}
	return exitOK
}

// errHostRunning: cleanup leaves a live host-mode daemon alone.
var errHostRunning = errors.New("stop it with SIGTERM, it undoes its own binds")

// cleanupHost undoes what the state file in dir lists, if its daemon is
// gone. A missing directory or state file is nothing to do; an unsafe
// directory or a state file naming what host mode never makes is refused.
func cleanupHost(dir string) error {
	d, err := openStateDir(dir, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer d.Close()
	st, err := loadHostState(d)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.alive():
		return fmt.Errorf("the host mount of pid %d is running; %w", st.PID, errHostRunning)
	}
	if err := st.undo(); err != nil {
		return err
	}
	fmt.Printf("undid the host mount of pid %d (%d changes)\n", st.PID, len(st.Changes))
	return nil
}

// detachDeadMount aborts and detaches the neuronfs FUSE mount at point,
// if that is what is mounted there and its daemon is gone: known to be
// (probe 0) or found to be by a probe that gets ENOTCONN within probe.
// Aborting first ends any request a dying daemon left waiting, which
// would otherwise keep it alive. The mount is pinned from the check to
// the detach, so the connection aborted is the one checked: its number
// could otherwise pass to another mount in between (fs.AbortPinned).
func detachDeadMount(point string, probe time.Duration) (bool, error) {
	pin, err := unix.Open(point, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("%s: %w", point, err)
	}
	defer unix.Close(pin)
	pinned, err := fs.Pinned(pin)
	if err != nil {
		return false, fmt.Errorf("%s: %w", point, err)
	}
	mounts, err := readMounts()
	if err != nil {
		return false, err
	}
	ours := false
	for _, m := range mounts {
		if m.id == pinned.ID {
			ours = m.point == point && m.neuronfs()
			break
		}
	}
	if !ours || (probe > 0 && !fuseDead(pin, probe)) {
		return false, nil
	}
	if err := fs.AbortPinned(pin); err != nil {
		return false, err
	}
	if err := unix.Unmount(fmt.Sprintf("/proc/self/fd/%d", pin), unix.MNT_DETACH); err != nil && err != unix.EINVAL {
		return false, fmt.Errorf("unmount %s: %w", point, err)
	}
	return true, nil
}
