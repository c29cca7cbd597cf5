package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkMountpoint answers the mistakes a MOUNTPOINT can hold in one plain
// line before anything starts, instead of the mount(2) error wrapped by
// every layer it went through.
func checkMountpoint(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: the directory does not exist", dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied on the way to it", dir)
	case err != nil:
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return fmt.Errorf("%s: %v", dir, errno)
		}
		return err
	case !st.IsDir():
		return fmt.Errorf("%s: not a directory", dir)
	}
	return nil
}

// mountedLine is what a bare mount prints once its tree is served: where,
// and that a program opening /dev/neuronN does not find it there.
func mountedLine(dir string, devices int) string {
	noun := "devices"
	if devices == 1 {
		noun = "device"
	}
	return fmt.Sprintf("neuronfs: %d %s served under %s (dev/, sys/, neuronfs/); programs that open /dev/neuronN need 'neuronfs run' or 'neuronfs mount --host'; SIGINT or SIGTERM unmounts", devices, noun, dir)
}
