package fs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const (
	fusectlDir        = "/sys/fs/fuse/connections"
	fusectlSuperMagic = 0x65735543
)

// KernelDev is the kernel's dev_t of a mount, which fusectl uses to name
// its connection.
func KernelDev(major, minor uint64) uint64 { return major<<20 | minor }

// AbortConnection aborts FUSE connection dev through fusectl: every
// request waiting for an answer ends with ENOTCONN. fusectl is mounted at
// its usual place if the host has not, or on a private directory if that
// place cannot take it (a read-only view of /sys).
func AbortConnection(dev uint64) error {
	dir := fusectlDir
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != fusectlSuperMagic {
		if err := unix.Mount("fusectl", dir, "fusectl", 0, ""); err != nil {
			tmp, terr := os.MkdirTemp("", "neuronfs-fusectl-")
			if terr != nil {
				return fmt.Errorf("mount fusectl: %w", err)
			}
			defer os.Remove(tmp)
			if err := unix.Mount("fusectl", tmp, "fusectl", 0, ""); err != nil {
				return fmt.Errorf("mount fusectl: %w", err)
			}
			defer unix.Unmount(tmp, unix.MNT_DETACH)
			dir = tmp
		}
	}
	path := fmt.Sprintf("%s/%d/abort", dir, dev)
	if err := os.WriteFile(path, []byte("1"), 0); errors.Is(err, os.ErrNotExist) {
		return nil // the connection has already ended
	} else if err != nil {
		return fmt.Errorf("abort fuse connection: %w", err)
	}
	return nil
}

// Abort ends the connection before this process exits. A daemon thread
// that is its own client (an on-behalf open being closed, go-fuse's poll
// probe) may still wait for an answer; if the serving threads die first,
// that thread never ends, and it keeps /dev/fuse open, so neither does
// the connection nor the process.
func (f *FS) Abort() error {
	if f.connDev == 0 {
		return nil
	}
	return AbortConnection(f.connDev)
}
