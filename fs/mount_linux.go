package fs

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// maxWrite is the largest FUSE request payload (and the max_read option).
const maxWrite = 128 * 1024

// mountFUSE mounts a FUSE filesystem at dir and returns the /dev/fuse fd
// to serve it on. Mounting here rather than inside go-fuse keeps the fd
// close-on-exec: a command run under `neuronfs run` must not inherit it.
func mountFUSE(dir string, extra []string) (int, error) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/fuse: %w", err)
	}
	opts := append([]string{
		fmt.Sprintf("fd=%d", fd),
		"rootmode=40000",
		fmt.Sprintf("user_id=%d", unix.Geteuid()),
		fmt.Sprintf("group_id=%d", unix.Getegid()),
		fmt.Sprintf("max_read=%d", maxWrite),
	}, extra...)
	if err := unix.Mount("neuronfs", dir, "fuse.neuronfs", unix.MS_NOSUID|unix.MS_NODEV, strings.Join(opts, ",")); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount: %w", err)
	}
	return fd, nil
}

// pollHackName is the file go-fuse answers specially so that a poll of it
// teaches the kernel that this filesystem has no poll.
const pollHackName = ".go-fuse-epoll-hack"

// disablePoll makes the kernel learn, before any client comes, that the
// filesystem does not implement poll. Otherwise the first epoll
// registration of one of its files (Go's os.Open does one) sends FUSE_POLL
// from inside the Go runtime, which can deadlock a process that serves
// and uses the mount at once. Raw syscalls keep this call itself clear of
// the netpoller. If the daemon is killed right now, it is its own client
// and only a connection abort (the reaper's) frees it.
func disablePoll(dir string) {
	fd, err := unix.Open(dir+"/"+pollHackName, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}
