package procfs

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pin is a pidfd that keeps a thread's answer about its process valid:
// the thread's own pidfd (PIDFD_THREAD, Linux ≥ 6.9) or, on older
// kernels, which give pidfds to thread-group leaders only, its process's.
type Pin struct {
	Fd     int
	Tgid   int32 // the thread's process
	tid    int32
	thread bool // Fd is the thread's own
}

// PinThread pins thread tid and reads its process. On a kernel without
// thread pidfds it reads the process first, pins that, and checks tid is
// still one of its threads while the process lives: a pinned live
// process keeps its number, so /proc/TGID is that process.
func PinThread(tid int32) (Pin, error) { return pinThread(tid, true) }

// pinThread is PinThread; without threadFDs it pins as on a kernel
// without thread pidfds.
func pinThread(tid int32, threadFDs bool) (Pin, error) {
	if threadFDs {
		fd, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
		if err == nil {
			tgid, err := Tgid(tid)
			if err != nil || !Alive(fd) {
				unix.Close(fd)
				return Pin{}, fmt.Errorf("thread %d: gone (%v)", tid, err)
			}
			return Pin{Fd: fd, Tgid: tgid, tid: tid, thread: true}, nil
		}
		if err != unix.EINVAL {
			return Pin{}, fmt.Errorf("pidfd of thread %d: %w", tid, err)
		}
	}
	tgid, err := Tgid(tid)
	if err != nil {
		return Pin{}, err
	}
	fd, err := unix.PidfdOpen(int(tgid), 0)
	if err != nil {
		return Pin{}, fmt.Errorf("pidfd of process %d: %w", tgid, err)
	}
	p := Pin{Fd: fd, Tgid: tgid, tid: tid}
	if !p.Holds() {
		unix.Close(fd)
		return Pin{}, fmt.Errorf("thread %d: gone", tid)
	}
	return p, nil
}

// Holds reports whether the pinned thread is still alive: for a process
// pin, whether a thread numbered tid is still in the live process (a
// number reused inside the same process gives the same answer).
func (p Pin) Holds() bool {
	if p.thread {
		return Alive(p.Fd)
	}
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(int(p.Tgid))+"/task/"+strconv.Itoa(int(p.tid)), &st) != nil {
		return false
	}
	return Alive(p.Fd)
}

// Tgid reads thread tid's process id from /proc.
func Tgid(tid int32) (int32, error) {
	v, err := Field(fmt.Sprintf("/proc/%d/status", tid), "Tgid")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	return int32(n), err
}

// Alive reports whether the task behind a pidfd has not exited. poll is
// never restarted after a signal handler, even a zero-timeout one: a
// daemon whose process takes signals (an in-process mount under a SIGALRM
// timer) would otherwise see a live caller as gone.
func Alive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}
