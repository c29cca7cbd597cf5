package chardev

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The calls below reach the supervisor only with Config.Direct (the
// filter of InstallFilter(true, …)): device descriptors are then opens of
// the devices' physical-memory files, whose own ioctl answers nothing a
// driver does, and whose close the driver must see.

// handleIoctl serves an ioctl of a device descriptor through Direct. A
// command that answers at once is served here, on the receiving thread,
// like an inline request of the io_uring transport: handing it to
// another thread would cost more than the command.
func (s *Supervisor) handleIoctl(n *seccompNotif, fd int32, cmd uint32, arg uint64) {
	file, ok := s.deviceOpen(n, fd)
	if !ok {
		return
	}
	id, tid := n.ID, n.Pid
	waits := !s.direct.Inline(cmd)
	serve := func() {
		t := Task{Tid: int32(tid), Mem: -1}
		pin, err := s.pins.get(tid)
		if err == nil {
			defer func() { s.pins.put(pin) }()
			t.Mem = pin.mem
			t.Repin = func() int {
				fresh, err := s.pins.repin(tid, pin)
				if err != nil {
					return -1
				}
				s.pins.put(pin)
				pin = fresh
				if !s.valid(id) {
					return -1
				}
				return pin.mem
			}
		} else {
			// The caller is gone (then the check below says so), or its
			// memory is not the daemon's to reach: then neither was it
			// by process_vm_*, and every access faults.
			s.log.WithError(err).Debug("ioctl of a device descriptor: serving it without the caller's memory")
		}
		// The pin is of whichever task had the number: the call still
		// being live after it proves that was the caller.
		if !s.valid(id) {
			return
		}
		if waits {
			gone, stop := s.watch(id)
			defer stop()
			t.Gone = gone
		}
		val, errno := file.Ioctl(t, cmd, arg)
		s.respond(id, val, errno, 0)
	}
	if waits {
		s.slow(serve)
		return
	}
	serve()
}

// handleClose runs the driver's flush for a close of a device
// descriptor, then lets the close go ahead.
func (s *Supervisor) handleClose(n *seccompNotif, fd int32) {
	file, ok := s.deviceOpen(n, fd)
	if !ok {
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() {
		if s.valid(id) {
			file.Flush(int32(tid))
		}
		s.direct.Forget(int32(tid), fd)
		s.pass(id)
		s.direct.Closed()
	})
}

// handleCloseRange flushes every device descriptor close_range closes
// (the filter sends those whose range reaches FDBase).
func (s *Supervisor) handleCloseRange(n *seccompNotif, first, last, flags uint32) {
	const closeRangeCloexec = 1 << 2 // CLOSE_RANGE_CLOEXEC: marks, closes nothing
	if s.direct == nil || flags&closeRangeCloexec != 0 || last < FDBase || first > last {
		s.pass(n.ID)
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() {
		if s.valid(id) {
			for _, fd := range s.fdsIn(tid, max(first, FDBase), last) {
				if file, ok := s.direct.Lookup(int32(tid), fd); ok {
					file.Flush(int32(tid))
				}
				s.direct.Forget(int32(tid), fd)
			}
		}
		s.pass(id)
		s.direct.Closed()
	})
}

// handleDupOnto flushes a device descriptor that dup2/dup3 replaces
// (newfd from FDBase up) before the copy goes ahead.
func (s *Supervisor) handleDupOnto(n *seccompNotif, oldfd, newfd int32) {
	if oldfd == newfd {
		s.pass(n.ID)
		return
	}
	file, ok := s.deviceOpen(n, newfd)
	if !ok {
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() {
		// dup2 onto a descriptor fails with EBADF when oldfd is not
		// open: then nothing is replaced.
		if s.valid(id) && s.isOpen(tid, oldfd) {
			file.Flush(int32(tid))
		}
		s.direct.Forget(int32(tid), newfd)
		s.pass(id)
		s.direct.Closed()
	})
}

// handleDirectDupLow refuses dup2/dup3 of a device descriptor onto a
// number below FDBase with EBADF, the kernel's answer for a number out
// of range: there the filter would no longer send its reads, writes and
// other refusals (refuse.go), which read and write the device's whole
// memory through the file. Every other copy goes ahead.
func (s *Supervisor) handleDirectDupLow(n *seccompNotif, oldfd, newfd int32) {
	if !s.memoryFile(n.Pid, oldfd) {
		s.pass(n.ID)
		return
	}
	if s.valid(n.ID) {
		s.log.Debugf("task %d: dup2 of device descriptor %d onto %d, below %d, refused", n.Pid, oldfd, newfd, FDBase)
		s.respond(n.ID, -1, unix.EBADF, 0)
	}
}

// deviceOpen finds the device open behind the notifying task's
// descriptor fd. When there is none (no Direct, or fd is no device
// descriptor) it lets the call go ahead untouched and reports false.
func (s *Supervisor) deviceOpen(n *seccompNotif, fd int32) (file File, ok bool) {
	if s.direct != nil {
		file, ok = s.direct.Lookup(int32(n.Pid), fd)
	}
	if !ok {
		s.pass(n.ID)
	}
	return file, ok
}

// fdsIn lists task tid's descriptors in [lo, hi].
func (s *Supervisor) fdsIn(tid uint32, lo, hi uint32) []int32 {
	d, err := os.Open("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/fd")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []int32
	for _, name := range names {
		if fd, err := strconv.ParseUint(name, 10, 32); err == nil && uint32(fd) >= lo && uint32(fd) <= hi {
			out = append(out, int32(fd))
		}
	}
	return out
}

func (s *Supervisor) isOpen(tid uint32, fd int32) bool {
	if fd < 0 {
		return false
	}
	_, err := os.Lstat("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/fd/" + strconv.FormatInt(int64(fd), 10))
	return err == nil
}
