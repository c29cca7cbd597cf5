package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// run starts its daemon by re-executing this binary. A program started
// with capabilities it then loses (setpriv, a container runtime handing
// over an open file) may find its own binary out of reach: under
// /root/go/bin, say, where 'go install' puts it. Rootless, the daemon's
// clone of a user namespace and its exec fail alike (fork/exec PATH:
// EACCES), so the binary is checked first: a path the caller cannot
// reach is named as such, not as a refused user namespace.

// reexecError explains a failed start of this binary as the daemon, or
// returns nil when the binary is within the caller's reach.
func reexecError(self string, err error) error {
	uid := os.Geteuid()
	if uid == 0 || reachable(self, uid, callerGroups()) {
		return nil
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = unix.EACCES
	}
	return fmt.Errorf("cannot re-execute %s as uid %d: %v (%s); copy the binary somewhere that user can read", self, uid, errno, unix.ErrnoName(errno))
}

// callerGroups are the caller's effective and supplementary groups.
func callerGroups() []int {
	gids, _ := os.Getgroups()
	return append(gids, os.Getegid())
}

// reachable reports whether uid (with gids), without capabilities, may
// search every directory on path's way and execute it.
func reachable(path string, uid int, gids []int) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if !permits(p, uid, gids) {
			return false
		}
		if p == "/" {
			break
		}
	}
	return permits(abs, uid, gids)
}

// permits reports whether p's mode grants uid (with gids) execute or
// search permission.
func permits(p string, uid int, gids []int) bool {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return false
	}
	switch {
	case int(st.Uid) == uid:
		return st.Mode&0o100 != 0
	case slices.Contains(gids, int(st.Gid)):
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}
