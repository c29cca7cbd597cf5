package chardev

import (
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's seccomp user-notification API: its structs, and the
// answers the supervisor gives a notification.

type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

const (
	ioctlNotifIDValid = 0x40082102 // SECCOMP_IOW(2, __u64)
	ioctlNotifAddfd   = 0x40182103 // SECCOMP_IOW(3, struct seccomp_notif_addfd)
)

func (s *Supervisor) respond(id uint64, val int64, errno unix.Errno, flags uint32) {
	resp := seccompNotifResp{ID: id, Val: val, Error: -int32(errno), Flags: flags}
	listenerIoctl(s.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// listenerIoctl issues a SEND or ID_VALID on the listener, again while a
// signal interrupts it. Both take the filter's lock interruptibly, so
// the Go runtime's preemption signal fails them with EINTR when the lock
// is contended, before they did anything: an answer then never reached
// its caller, and a live notification read as gone, leaving the caller
// blocked for good.
func listenerIoctl(listener int, req uint, arg unsafe.Pointer) unix.Errno {
	return untilNotInterrupted(func() unix.Errno {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), uintptr(req), uintptr(arg))
		return e
	})
}

// untilNotInterrupted calls f until it fails with something other than
// EINTR, and returns that.
func untilNotInterrupted(f func() unix.Errno) unix.Errno {
	for {
		if e := f(); e != unix.EINTR {
			return e
		}
	}
}

// pass lets the call proceed in the kernel as if it had not been
// filtered.
func (s *Supervisor) pass(id uint64) { s.respond(id, 0, 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE) }

// valid reports whether the notification is still live, i.e. what was
// read from the target's memory or /proc belongs to this very syscall.
func (s *Supervisor) valid(id uint64) bool {
	return listenerIoctl(s.listener, ioctlNotifIDValid, unsafe.Pointer(&id)) == 0
}

// addfdUninterrupted issues ADDFD with every signal blocked on the
// calling thread. ADDFD with FLAG_SEND marks the notification answered
// before it waits for the target to install the descriptor; if a signal
// (the Go runtime's SIGURG preemption) interrupts that wait, the kernel
// withdraws the descriptor, the restarted ioctl fails with EINPROGRESS,
// and the target's call returns 0 with no descriptor installed.
func addfdUninterrupted(listener int, add *seccompNotifAddfd) (int, unix.Errno) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return -1, err.(unix.Errno)
	}
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), ioctlNotifAddfd, uintptr(unsafe.Pointer(add)))
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return int(fd), e
}
