package chardev

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"
)

// Installing a device descriptor in a filtered process, at a number from
// FDBase up that the filter recognises.

// install puts src into the target at the lowest free number from FDBase
// up, as the answer to notification id.
func (s *Supervisor) install(id uint64, tid uint32, src int, cloexec bool) {
	add := seccompNotifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(src)}
	if cloexec {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	slot, ok := s.reserve(tid)
	if !ok && s.direct != nil {
		// A direct descriptor below FDBase would read and write the
		// device's whole memory unseen: as if no number were free.
		s.log.Warnf("task %d: no descriptor number free from %d below its RLIMIT_NOFILE: its device open fails with EMFILE", tid, FDBase)
		s.respond(id, 0, unix.EMFILE, 0)
		return
	}
	if ok {
		defer s.unreserve(slot)
		add.Flags |= unix.SECCOMP_ADDFD_FLAG_SETFD
		add.Newfd = slot
	}
	// With FLAG_SEND the installed fd number is the syscall's result.
	fd, e := addfdUninterrupted(s.listener, &add)
	if e != 0 && e != unix.ENOENT {
		s.log.WithError(e).Warn("installing a device fd failed")
		s.respond(id, 0, e, 0)
	}
	if e == 0 && s.direct != nil {
		// Whatever the number was remembered as is gone (its close was
		// seen, unless it raced with this call).
		s.direct.Forget(int32(tid), int32(fd))
	}
}

// reserve picks the lowest number from FDBase up that is free in task
// tid's descriptor table and below its RLIMIT_NOFILE. Without one (a
// limit of FDBase or less, or every number taken) the descriptor goes
// where the kernel puts it, the lowest free number, and the filter does
// not recognise it: it works, but fstat shows the FUSE file and mmaps
// are not checked. That is logged.
func (s *Supervisor) reserve(tid uint32) (uint32, bool) {
	soft, err := nofileLimit(tid)
	if err != nil {
		s.log.WithError(err).Warnf("task %d: cannot read its RLIMIT_NOFILE", tid)
		return 0, false
	}
	limit := min(soft, FDBase+1<<20)
	// The listing and the choice happen under the lock: a number another
	// installation released after this listing was made would otherwise
	// look free, and the second ADDFD would replace the first descriptor.
	// Reading /proc is no wait on another party; the ADDFD, which waits
	// for the target, happens after the lock is released.
	s.mu.Lock()
	used, err := usedFDs(tid)
	if err != nil {
		s.mu.Unlock()
		s.log.WithError(err).Warnf("task %d: cannot list its descriptors", tid)
		return 0, false
	}
	for fd := uint32(FDBase); uint64(fd) < limit; fd++ {
		if !used[fd] && !s.reserved[fd] {
			s.reserved[fd] = true
			s.mu.Unlock()
			return fd, true
		}
	}
	s.mu.Unlock()
	if s.direct == nil {
		s.log.Warnf("task %d: no descriptor number free from %d below its RLIMIT_NOFILE (%d): its device descriptor gets the lowest free number, where fstat shows the FUSE file and mmaps are not checked", tid, FDBase, soft)
	}
	return 0, false
}

// usedFDs lists task tid's descriptors from FDBase up.
func usedFDs(tid uint32) (map[uint32]bool, error) {
	d, err := os.Open(fmt.Sprintf("/proc/%d/fd", tid))
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	used := map[uint32]bool{}
	for _, name := range names {
		if fd, err := strconv.ParseUint(name, 10, 32); err == nil && fd >= FDBase {
			used[uint32(fd)] = true
		}
	}
	return used, err
}

// nofileLimit is task tid's soft RLIMIT_NOFILE: from prlimit, which
// needs CAP_SYS_RESOURCE for another user's task (a container may not
// grant it), or else from /proc/TID/limits.
func nofileLimit(tid uint32) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Prlimit(int(tid), unix.RLIMIT_NOFILE, nil, &lim); err == nil {
		return lim.Cur, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", tid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Max open files")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				break
			}
			if string(f[0]) == "unlimited" {
				return ^uint64(0), nil
			}
			return strconv.ParseUint(string(f[0]), 10, 64)
		}
	}
	return 0, fmt.Errorf("no open-files line in /proc/%d/limits", tid)
}

func (s *Supervisor) unreserve(fd uint32) {
	s.mu.Lock()
	delete(s.reserved, fd)
	s.mu.Unlock()
}

// handleDup follows dup and fcntl(F_DUPFD*) of a device descriptor (the
// filter sends only those whose copy would land below FDBase): the copy,
// the same open file, goes to a number from FDBase up instead, so the
// filter keeps recognising it. The number differs from the kernel's
// lowest free one; nothing about the open file does.
func (s *Supervisor) handleDup(n *seccompNotif, fd int32, cloexec bool) {
	if _, ok := s.ourFD(n.Pid, fd); !ok {
		s.pass(n.ID)
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() {
		// Before Linux 6.9 the pin is the caller's process, whose
		// descriptor table its threads share (a thread that unshared
		// its table is not followed there).
		pin, err := procfs.PinThread(int32(tid))
		if err != nil {
			s.pass(id)
			return
		}
		pidfd := pin.Fd
		defer unix.Close(pidfd)
		// The pidfd pins the task: if the notification is still live, it
		// is the task that made the call.
		if !s.valid(id) {
			return
		}
		src, err := unix.PidfdGetfd(pidfd, int(fd), 0)
		if err != nil {
			s.log.WithError(err).Debug("pidfd_getfd of a device descriptor")
			s.pass(id)
			return
		}
		defer unix.Close(src)
		s.install(id, tid, src, cloexec)
	})
}

// handleFcntl serves the fcntl commands the filter sends: F_DUPFD and
// F_DUPFD_CLOEXEC, and with Direct the lock commands.
func (s *Supervisor) handleFcntl(n *seccompNotif, fd, cmd int32, arg uint64) {
	switch cmd {
	case unix.F_OFD_SETLK, unix.F_OFD_SETLKW, unix.F_SETLK, unix.F_SETLKW:
		if s.direct != nil {
			s.handleLock(n, fd, arg)
			return
		}
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		s.handleDup(n, fd, cmd == unix.F_DUPFD_CLOEXEC)
		return
	}
	s.pass(n.ID)
}

// handleDup2 follows dup2 and dup3 (the filter sends those whose copy
// lands on a device descriptor's number or replaces one); cloexec is
// dup3's O_CLOEXEC.
func (s *Supervisor) handleDup2(n *seccompNotif, oldfd, newfd int32, cloexec bool) {
	if s.paths != nil && newfd < FDBase && s.handleAttrDupLow(n, oldfd, newfd, cloexec) {
		return
	}
	if s.direct != nil {
		if newfd >= FDBase {
			s.handleDupOnto(n, oldfd, newfd)
		} else {
			s.handleDirectDupLow(n, oldfd, newfd)
		}
		return
	}
	// A copy onto a number below FDBase is outside the range the
	// filter recognises: it works (the same open file, so every
	// ioctl is the same), but its fstat and mmap are no longer
	// seen. The program chose the number, so it is kept.
	if s.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		if minor, ok := s.ourFD(n.Pid, oldfd); ok {
			s.log.Debugf("task %d copies a descriptor of neuron%d to %d, below %d: its fstat and mmap are not checked", n.Pid, minor, newfd, FDBase)
		}
	}
	s.pass(n.ID)
}
