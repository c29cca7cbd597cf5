package device

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// The process watch: each process that attaches to a device is watched
// through a pidfd (on the runtime's poller, so a watch costs no thread),
// and when it exits while still attached somewhere, the devices release
// what it held as its last flush would have. Normally the flushes of its
// exit come first and this finds nothing to do.

// watchProcess starts watching tgid unless it is watched already. Callers
// may hold d.mu (s.mu ranks below it).
func (s *System) watchProcess(tgid int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watched == nil || s.watched[tgid] != nil {
		return
	}
	fd, err := unix.PidfdOpen(int(tgid), unix.PIDFD_NONBLOCK)
	if err != nil {
		return // already gone: its flushes came or are on their way
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	s.watched[tgid] = f
	go s.awaitExit(tgid, f)
}

// awaitExit waits for tgid's exit, or for the watch to be closed.
func (s *System) awaitExit(tgid int32, f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, 0)
		exited = n > 0
		return exited
	})
	s.mu.Lock()
	if s.watched[tgid] == f {
		delete(s.watched, tgid)
		f.Close()
	}
	s.mu.Unlock()
	if err == nil && exited {
		s.processGone(tgid)
	}
}

// processGone releases what a dead process still holds, device by device,
// through the same path as its last flush, and its host-wide core marks.
func (s *System) processGone(tgid int32) {
	caller := Caller{Tid: tgid, Tgid: tgid} // no signal check: the reset it asked for is waited out
	for _, d := range s.Devices {
		d.detach(context.Background(), caller, true)
	}
	s.detached(tgid)
	s.unmarkAll(tgid)
}

// closeWatches stops every watch (system shutdown).
func (s *System) closeWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tgid, f := range s.watched {
		f.Close()
		delete(s.watched, tgid)
	}
	s.watched = nil
}
