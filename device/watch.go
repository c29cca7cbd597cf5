package device

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// exitWatch is the process watch: each process that attaches to a device
// is watched through a pidfd (on the runtime's poller, so a watch costs
// no thread), and when it exits while still attached somewhere, the
// devices release what it held as its last flush would have. Normally the
// flushes of its exit come first and this finds nothing to do.
type exitWatch struct {
	s     *System
	files map[int32]*os.File // pidfds by tgid, under s.mu; nil once closed
}

// watch starts watching tgid unless it is watched already. Callers may
// hold d.mu (s.mu ranks below it).
func (w *exitWatch) watch(tgid int32) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.files == nil || w.files[tgid] != nil {
		return
	}
	fd, err := unix.PidfdOpen(int(tgid), unix.PIDFD_NONBLOCK)
	if err != nil {
		return // already gone: its flushes came or are on their way
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	w.files[tgid] = f
	go w.awaitExit(tgid, f)
}

// awaitExit waits for tgid's exit, or for the watch to be closed.
func (w *exitWatch) awaitExit(tgid int32, f *os.File) {
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
	w.s.mu.Lock()
	if w.files[tgid] == f {
		delete(w.files, tgid)
		f.Close()
	}
	w.s.mu.Unlock()
	if err == nil && exited {
		w.gone(tgid)
	}
}

// gone releases what a dead process still holds, device by device,
// through the same path as its last flush, and its host-wide core marks.
func (w *exitWatch) gone(tgid int32) {
	caller := Caller{Tid: tgid, Tgid: tgid} // no signal check: the reset it asked for is waited out
	for _, d := range w.s.Devices {
		d.detach(context.Background(), caller, true)
	}
	w.s.pins.detached(tgid)
	w.s.cores.unmarkAll(tgid)
}

// close stops every watch (system shutdown).
func (w *exitWatch) close() {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for tgid, f := range w.files {
		f.Close()
		delete(w.files, tgid)
	}
	w.files = nil
}
