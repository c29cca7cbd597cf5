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

// kernelDev is the kernel's dev_t of a mount, which fusectl uses to name
// its connection.
func kernelDev(major, minor uint64) uint64 { return major<<20 | minor }

// PinnedMount describes the FUSE mount a descriptor pins (an O_PATH open
// of its root or of any file in it), read without asking its daemon.
type PinnedMount struct {
	ID  uint64 // the mount ID, mountinfo's first field
	Dev uint64 // the kernel's dev_t, which names the connection in fusectl
}

// Pinned reads what fd pins. AT_STATX_DONT_SYNC keeps FUSE from asking
// the daemon, which may be dead or wedged.
func Pinned(fd int) (PinnedMount, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &stx); err != nil {
		return PinnedMount{}, fmt.Errorf("statx: %w", err)
	}
	return PinnedMount{ID: stx.Mnt_id, Dev: kernelDev(uint64(stx.Dev_major), uint64(stx.Dev_minor))}, nil
}

// AbortPinned aborts the FUSE connection of the mount fd pins, through
// fusectl: every request waiting for an answer ends with ENOTCONN.
//
// A connection is named by its device number only, and the kernel hands a
// number freed by an unmount to the next mount of any file system. The
// descriptor keeps the superblock, and with it the number, from being
// freed while the abort is written; without it, an abort sent after an
// unmount ends a stranger's connection (seen: another daemon's mount
// failing its INIT with ENODEV).
//
// fusectl is mounted at its usual place if the host has not, or on a
// private directory if that place cannot take it (a read-only /sys).
func AbortPinned(fd int) error {
	m, err := Pinned(fd)
	if err != nil {
		return fmt.Errorf("abort fuse connection: %w", err)
	}
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
	path := fmt.Sprintf("%s/%d/abort", dir, m.Dev)
	if err := os.WriteFile(path, []byte("1"), 0); errors.Is(err, os.ErrNotExist) {
		return nil // not a FUSE mount, or its connection has already ended
	} else if err != nil {
		return fmt.Errorf("abort fuse connection: %w", err)
	}
	return nil
}

// Abort ends the connection before this process exits. A daemon thread
// that is its own client (an on-behalf open being closed, go-fuse's poll
// probe) may still wait for an answer; if the serving threads die first,
// that thread never ends, and it keeps /dev/fuse open, so neither does
// the connection nor the process. After an unmount that ended the
// connection there is nothing left to abort.
func (f *FS) Abort() error {
	pin := int(f.abortPin.Swap(-1))
	if pin < 0 {
		return nil
	}
	defer unix.Close(pin)
	return AbortPinned(pin)
}

// repin pins the mount again for Abort, when an unmount is about to
// detach a mount still in use: its superblock, and the connection, live
// on until the last user goes.
func (f *FS) repin() {
	pin, err := unix.Open(f.mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	dev := f.mountDev.Load()
	if m, err := Pinned(pin); err != nil || m.Dev != kernelDev(dev>>32, dev&0xffffffff) || !f.abortPin.CompareAndSwap(-1, int32(pin)) {
		unix.Close(pin)
	}
}
