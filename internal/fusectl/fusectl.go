// Package fusectl aborts FUSE connections through the kernel's FUSE
// control filesystem, which names each connection by its mount's device
// number. It imports nothing of neuronfs: the fs package and the exit
// guard (a separate process) share it.
package fusectl

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const (
	// Dir is where the kernel expects the control filesystem.
	Dir        = "/sys/fs/fuse/connections"
	superMagic = 0x65735543
)

// Conn is the connection number of a mount whose st_dev has the given
// major and minor: the kernel's own dev_t encoding.
func Conn(major, minor uint64) uint64 { return major<<20 | minor }

// Abort ends connection conn: every request waiting for an answer ends
// with ENOTCONN, and callers stuck in an uninterruptible wait (a flush
// while their process exits) are released. A connection that no longer
// exists is not an error.
//
// The caller must know conn still names the mount it means: the kernel
// hands a freed number to the next mount of any file system.
//
// The control filesystem is mounted at Dir if the host has not, or on a
// private directory if Dir cannot take it (a read-only /sys).
func Abort(conn uint64) error {
	dir := Dir
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != superMagic {
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
	path := fmt.Sprintf("%s/%d/abort", dir, conn)
	if err := os.WriteFile(path, []byte("1"), 0); errors.Is(err, os.ErrNotExist) {
		return nil // not a FUSE mount, or its connection has already ended
	} else if err != nil {
		return fmt.Errorf("abort fuse connection %d: %w", conn, err)
	}
	return nil
}
