package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
)

// The conditions a user can fix are reported as one line each, before
// any logging starts, instead of as a logged error with its wrapping.

// errNotRoot and errNoFUSE name the two preconditions of every mount.
var (
	errNotRoot = errors.New("needs root (FUSE mounts and mount namespaces); try sudo")
	errNoFUSE  = errors.New("/dev/fuse is missing or not usable: load the fuse module ('modprobe fuse') or give the container /dev/fuse")
)

// fuseDevice is the character device of the FUSE driver (10:229).
const fuseDevice = "/dev/fuse"

// requireRoot answers a caller without root before the flags are checked:
// what they name (a backing directory, say) may not even be visible to
// it, and that is not the mistake to report.
func requireRoot(cmd string) (status int, ok bool) {
	if os.Geteuid() == 0 {
		return 0, true
	}
	return failLine(cmd, errNotRoot), false
}

// preflight checks that a mount can be attempted at all.
func preflight() error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	return preflightFUSE()
}

// preflightFUSE checks that /dev/fuse is the FUSE device and that this
// caller may open it read-write.
func preflightFUSE() error {
	var st unix.Stat_t
	if err := unix.Stat(fuseDevice, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR ||
		unix.Major(uint64(st.Rdev)) != 10 || unix.Minor(uint64(st.Rdev)) != 229 {
		return errNoFUSE
	}
	if err := unix.Access(fuseDevice, unix.R_OK|unix.W_OK); err != nil {
		return errNoFUSE
	}
	return nil
}

// mountError turns a failed fs.Mount into the line the user reads.
func mountError(err error) error {
	if errors.Is(err, fs.ErrMmapNotCoherent) {
		return errors.New("FUSE passthrough is unavailable (Linux >= 6.9 and CAP_SYS_ADMIN are needed for mmap of the devices); --degraded-mmap starts without it")
	}
	return err
}

// failLine prints the one line a command ends with and returns status 1.
func failLine(cmd string, err error) int {
	fmt.Fprintf(os.Stderr, "neuronfs %s: %v\n", cmd, err)
	return exitFailure
}

// logFormatter is --log-format's logrus formatter.
func logFormatter(name string) (logrus.Formatter, error) {
	switch name {
	case "", "text":
		return &logrus.TextFormatter{}, nil
	case "json":
		return &logrus.JSONFormatter{}, nil
	}
	return nil, fmt.Errorf("unknown log format %q (want text or json)", name)
}
