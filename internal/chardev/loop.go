package chardev

import (
	goruntime "runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// scratch is the loop's reusable memory, so the common path allocates
// nothing.
type scratch struct {
	path [unix.PathMax + 64]byte
	buf  [4096]byte
	// resolving is the id of the open whose path the loop is resolving
	// (0: none): whoever swaps it to 0 first answers the open, the loop
	// when the resolution ends or the stall timer at ResolveBound.
	resolving    atomic.Uint64
	resolvingTid atomic.Uint32 // its caller, for the log
}

// stallAfter is how long the receiving thread may spend on one
// notification before another thread starts receiving. Deciding an open
// resolves its path, and a lookup on a FUSE file system that a filtered
// process serves waits for that process, which may itself be waiting for
// an open of its own to be answered.
const stallAfter = 50 * time.Millisecond

// ResolveBound is how long an open's path may take to resolve before
// the open is answered CONTINUE: the kernel then does the open itself
// (a device node's fails, as it would without the supervisor), and the
// caller no longer waits on the supervisor.
const ResolveBound = time.Second

// MaxResolvingLoops bounds the stalled loops: each holds its OS thread
// until what stalled it (a path lookup) ends. With that many stalled, one
// more loop serves the rest and answers opens without resolving them.
const MaxResolvingLoops = 8

// loop receives and answers notifications on its own OS thread. Calls
// that cannot concern a device (the path of an open does not name one, a
// descriptor is not one) are answered here, at once; calls on a device go
// to a goroutine of their own, since they call into the FUSE tree and the
// emulated driver and may wait.
//
// Normally one loop runs. When a loop has spent stallAfter on one
// notification and no other is receiving, another starts; a loop that
// finishes a notification while another is receiving ends, so the count
// goes back to one. At most maxLoops loops stall: with that many
// stalled, the one more loop that starts answers opens CONTINUE without
// resolving them (until a stalled one ends), so the supervisor's threads
// stay bounded while every other call is still served. An open still
// resolving after ResolveBound is answered CONTINUE.
func (s *Supervisor) loop() {
	defer s.wg.Done()
	defer s.loops.Add(-1)
	// A thread of its own: a goroutine moved between threads would be
	// rescheduled behind other goroutines on every notification.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	sc := new(scratch)
	fired := make(chan struct{}, 1)
	finished := make(chan struct{}, 1) // the notification was answered
	stall := time.AfterFunc(time.Hour, func() {
		s.stalled.Add(1) // until the loop has read fired
		s.spawn()
		if id := sc.resolving.Load(); id != 0 {
			select {
			case <-finished:
			case <-time.After(ResolveBound - stallAfter):
				if sc.resolving.CompareAndSwap(id, 0) {
					s.log.WithFields(logrus.Fields{"tid": sc.resolvingTid.Load(), "bound": ResolveBound}).Warn("an open's path is still resolving: the kernel opens it itself")
					s.pass(id)
				}
			}
		}
		fired <- struct{}{}
	})
	stall.Stop()
	for {
		var n seccompNotif // RECV wants it zeroed
		s.receiving.Add(1)
		more, ok := s.receive(&n)
		s.receiving.Add(-1)
		if !more {
			return
		}
		if !ok {
			continue
		}
		stall.Reset(stallAfter)
		s.handle(&n, sc)
		if !stall.Stop() {
			finished <- struct{}{}
			<-fired
			s.stalled.Add(-1)
			select {
			case <-finished: // not waited for
			default:
			}
		}
		if s.receiving.Load() > 0 {
			return
		}
	}
}

// handleExec forgets what an exec may close unseen: the caller's pinned
// memory and, with Direct, its remembered descriptors.
func (s *Supervisor) handleExec(n *seccompNotif) {
	s.pins.execed()
	if s.direct != nil {
		s.direct.ForgetProcess(int32(n.Pid))
	}
	s.pass(n.ID)
}

// spawn starts another loop when none is receiving, unless maxLoops
// are stalled and the one more is running: that one does not stall on
// paths (handleOpen).
func (s *Supervisor) spawn() {
	if s.receiving.Load() != 0 {
		return
	}
	n := s.loops.Load()
	if n > s.maxLoops || !s.loops.CompareAndSwap(n, n+1) {
		return
	}
	if s.stalled.Load() >= s.maxLoops {
		s.log.WithField("stalled", s.stalled.Load()).Warn("calls are stalled (opens resolving their paths): further opens go to the kernel unresolved until one ends")
	}
	s.wg.Add(1) // the stalled loop's count is held until its stall timer is done
	go s.loop()
}

// receive takes the next notification into n. more is false once no
// filtered task is left; ok is false when nothing was taken (a signal,
// or a target that died before its notification was received).
func (s *Supervisor) receive(n *seccompNotif) (more, ok bool) {
	if !s.syncWake {
		// Before Linux 6.6 a blocked RECV is not woken when the last
		// filtered task goes away; the listener's poll reports it.
		fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			return err == unix.EINTR, false
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return false, false
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n))); e != 0 {
		switch e {
		case unix.EINTR:
			return true, false
		case unix.ENOENT:
			// The target died between notification and receipt, another
			// loop took it, or no task uses the filter any more (then
			// the listener reports a hang-up).
			return !s.orphaned(), false
		}
		return false, false // ENOTCONN etc.: no task uses the filter any more
	}
	return true, true
}

// orphaned reports whether no task uses the filter any more.
func (s *Supervisor) orphaned() bool {
	fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, 0)
	return err == nil && fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}

// slow runs f, a device call, on a goroutine of its own.
func (s *Supervisor) slow(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

func (s *Supervisor) handle(n *seccompNotif, sc *scratch) {
	call := hostArch.call(n.Data.Nr)
	if s.paths != nil {
		// The caller's writes through attribute pipes come first.
		s.pipes.settle()
		if s.handleView(n, call, sc) {
			return
		}
	}
	a := n.Data.Args
	switch call {
	case sysOpen:
		s.handleOpen(n, sc, unix.AT_FDCWD, a[0], a[1])
	case sysOpenat:
		s.handleOpen(n, sc, int32(a[0]), a[1], a[2])
	case sysOpenat2:
		s.handleOpenat2(n, sc, int32(a[0]), a[1], a[2], a[3])
	case sysFstat:
		s.handleStat(n, int32(a[0]), a[1], false, 0)
	case sysNewfstatat:
		s.handleEmptyPathStat(n, sc, int32(a[0]), a[1], a[2], false, 0)
	case sysStatx:
		s.handleEmptyPathStat(n, sc, int32(a[0]), a[1], a[4], true, uint32(a[3]))
	case sysMmap:
		s.handleMmap(n, int32(a[4]), a[5], a[1], int(a[2]), int(a[3]))
	case sysMremap:
		s.handleMremap(n, a[0], a[1], a[2])
	case sysDup:
		s.handleDup(n, int32(a[0]), false)
	case sysFcntl:
		s.handleFcntl(n, int32(a[0]), int32(a[1]), a[2])
	case sysExecve, sysExecveat:
		s.handleExec(n)
	case sysIoctl:
		s.handleIoctl(n, int32(a[0]), uint32(a[1]), a[2])
	case sysClose:
		s.handleClose(n, int32(a[0]))
	case sysCloseRange:
		s.handleCloseRange(n, uint32(a[0]), uint32(a[1]), uint32(a[2]))
	case sysDup2:
		s.handleDup2(n, int32(a[0]), int32(a[1]), false)
	case sysDup3:
		s.handleDup2(n, int32(a[0]), int32(a[1]), a[2]&unix.O_CLOEXEC != 0)
	case sysTruncate:
		s.handleTruncate(n, sc, a[0])
	default:
		if r, ok := refusalFor(call); ok {
			s.handleRefusal(n, r)
			return
		}
		s.pass(n.ID)
	}
}
