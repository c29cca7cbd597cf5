//go:build linux

package exitguard

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HoldFiles makes this process's file table outlive it, so that its exit
// never closes a file of a mount it serves itself: the guard closes them
// later, after aborting the registered mounts.
//
// Why: an exiting process closes its files in the last of its threads to
// exit. Over FUSE's io_uring transport, a FLUSH of its own mount lands on
// the ring of that thread's CPU; if that thread is the ring's owner, the
// delivery is task work only it would run, after its files are closed,
// and no abort ends the wait (seen on 6.18: about one SIGKILL in five left
// a test binary in D state until reboot). A file table shared with another
// process is not closed when one of them exits.
//
// The holder is a child that shares the table (clone with CLONE_FILES and
// not CLONE_VM: a fork that keeps one table) and does nothing else: with
// every signal blocked it waits for the guard's pidfd and exits when the
// guard does. The guard kills it once the parent has gone and the parent's
// mounts are aborted; the holder's exit then closes the files, each flush
// answered at once by the aborted connection.
func (g *Guard) HoldFiles() error {
	guardFD, err := unix.PidfdOpen(g.cmd.Process.Pid, 0)
	if err != nil {
		return fmt.Errorf("exit guard: pidfd of the guard: %w", err)
	}
	// The descriptor stays open for the holder, which shares it.
	all := unix.Sigset_t{}
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	var old unix.Sigset_t
	pid, errno := forkHolder(uintptr(guardFD), &all, &old)
	if errno != 0 {
		unix.Close(guardFD)
		return fmt.Errorf("exit guard: start the file holder: %w", errno)
	}
	g.holder = int(pid)
	return g.do(msg{Op: "holder", PID: int(pid)})
}

// Holder is the pid of the file holder, or 0.
func (g *Guard) Holder() int { return g.holder }

// pollFD is struct pollfd.
type pollFD struct {
	fd      int32
	events  int16
	revents int16
}

// forkHolder starts the holder. Between the clone and the holder's exit
// the child runs only this function: no stack growth (nosplit), no race
// instrumentation (norace), raw system calls only, as in the runtime's own
// fork. The calling thread blocks every signal around the clone, so the
// child starts with them blocked and never enters Go's handler.
//
//go:nosplit
//go:norace
func forkHolder(guardFD uintptr, all, old *unix.Sigset_t) (uintptr, syscall.Errno) {
	const sigsetSize = 8
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(all)), uintptr(unsafe.Pointer(old)), sigsetSize, 0, 0); e != 0 {
		return 0, e
	}
	pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(unix.CLONE_FILES|unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 || pid != 0 {
		syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(old)), 0, sigsetSize, 0, 0)
		return pid, e
	}
	// The holder: wait for the guard to end, then leave. An error from
	// ppoll (none is expected) ends the wait too, never a busy loop.
	pfd := pollFD{fd: int32(guardFD), events: unix.POLLIN}
	syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, 0, 0, sigsetSize, 0)
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	}
}
