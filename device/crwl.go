package device

import (
	"syscall"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
)

// The cooperative reader/writer lock ("crwl") the runtime takes around model
// load (writer) and execution (readers), one per core slot of a device, and
// the host-wide core reservation table behind NC_RANGE_MARK.

// maxCoreSlots is the driver's per-device core array size (MAX_NC_PER_DEVICE);
// crwl indices are checked against it, not against the real core count.
const maxCoreSlots = 8

// How long a waiter retries before -EBUSY: the driver sleeps 10-20 µs per
// try, 50,000 tries for a reader and 200,000 for a writer.
const (
	crwlReaderWait = 50_000 * 15 * time.Microsecond
	crwlWriterWait = 200_000 * 15 * time.Microsecond
)

type crwlSlot struct {
	writerAcquired bool
	writerPID      int32
	readers        int64
	uuid           ioctl.UUID
}

// crwlState is a device's locks.
type crwlState struct {
	slots [maxCoreSlots]crwlSlot
}

// validateCRWL: the uuid must be the stored one and the caller its writer.
func validateCRWL(s *crwlSlot, uuid ioctl.UUID, tgid int32) syscall.Errno {
	if s.uuid != uuid || s.writerPID != tgid {
		return syscall.ENOENT
	}
	return 0
}

func crwlArg(r *Request) (ioctl.CRWL, Result) {
	var v ioctl.CRWL
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return v, n
	}
	if v.NCID >= maxCoreSlots {
		return v, Errno(syscall.EINVAL)
	}
	return v, 0
}

// onSlot runs op on the caller's crwl slot with the device locked.
func onSlot(r *Request, op func(d *Device, s *crwlSlot, v ioctl.CRWL) syscall.Errno) Result {
	v, res := crwlArg(r)
	if res != 0 {
		return res
	}
	d := r.Dev()
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := op(d, &d.crwl.slots[v.NCID], v); e != 0 {
		return Errno(e)
	}
	return 0
}

func crwlReaderEnter(r *Request) Result {
	return onSlot(r, func(d *Device, s *crwlSlot, v ioctl.CRWL) syscall.Errno {
		if e := d.wait.waitLocked(crwlReaderWait, r.Caller.Gone, func() bool { return !s.writerAcquired }); e != 0 {
			return e
		}
		if e := validateCRWL(s, v.UUID, r.Caller.Tgid); e != 0 {
			return e
		}
		s.readers++
		d.wait.notifyLocked()
		return 0
	})
}

func crwlReaderExit(r *Request) Result {
	return onSlot(r, func(d *Device, s *crwlSlot, v ioctl.CRWL) syscall.Errno {
		if e := validateCRWL(s, v.UUID, r.Caller.Tgid); e != 0 {
			return e
		}
		if s.readers == 0 {
			return syscall.EINVAL
		}
		s.readers--
		d.wait.notifyLocked()
		return 0
	})
}

func crwlWriterEnter(r *Request) Result {
	return onSlot(r, func(d *Device, s *crwlSlot, v ioctl.CRWL) syscall.Errno {
		if e := d.wait.waitLocked(crwlWriterWait, r.Caller.Gone, func() bool { return !s.writerAcquired && s.readers == 0 }); e != 0 {
			return e
		}
		s.writerAcquired = true
		d.wait.notifyLocked()
		// Another thread of this process already loaded this model.
		if s.writerPID == r.Caller.Tgid && s.uuid == v.UUID {
			return syscall.EALREADY
		}
		s.writerPID, s.uuid = r.Caller.Tgid, v.UUID
		return 0
	})
}

func crwlWriterDowngrade(r *Request) Result {
	return onSlot(r, func(d *Device, s *crwlSlot, v ioctl.CRWL) syscall.Errno {
		if !s.writerAcquired {
			return syscall.EINVAL
		}
		if e := validateCRWL(s, v.UUID, r.Caller.Tgid); e != 0 {
			return e
		}
		s.writerAcquired = false
		s.readers = 1
		d.wait.notifyLocked()
		return 0
	})
}

// releaseLocked drops every lock tgid holds as writer (last flush); the
// caller wakes the device's waiters.
func (c *crwlState) releaseLocked(tgid int32) {
	for i := range c.slots {
		if s := &c.slots[i]; s.writerPID == tgid {
			*s = crwlSlot{}
		}
	}
}

// lockMapLocked reports, for DEVICE_GET_ALL_APPS_INFO, the cores among the
// first four where pid is the writer of a held lock, and their uuids.
func (c *crwlState) lockMapLocked(pid int32) (uint8, [4]ioctl.UUID) {
	var m uint8
	var uuids [4]ioctl.UUID
	for i := 0; i < 4; i++ {
		s := &c.slots[i]
		if s.writerPID == pid && (s.writerAcquired || s.readers > 0) {
			m |= 1 << i
			uuids[i] = s.uuid
		}
	}
	return m, uuids
}
