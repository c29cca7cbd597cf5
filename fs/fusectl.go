package fs

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/fusectl"
)

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
	return PinnedMount{ID: stx.Mnt_id, Dev: fusectl.Conn(uint64(stx.Dev_major), uint64(stx.Dev_minor))}, nil
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
func AbortPinned(fd int) error {
	m, err := Pinned(fd)
	if err != nil {
		return fmt.Errorf("abort fuse connection: %w", err)
	}
	return fusectl.Abort(m.Dev)
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
	if m, err := Pinned(pin); err != nil || m.Dev != fusectl.Conn(dev>>32, dev&0xffffffff) || !f.abortPin.CompareAndSwap(-1, int32(pin)) {
		unix.Close(pin)
	}
}
