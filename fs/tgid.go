package fs

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// tgidCache maps the thread id FUSE reports to the thread-group id the
// driver keys processes by. Each entry holds a pidfd of the thread so a
// recycled tid is never mistaken for the thread it replaced.
type tgidCache struct {
	mu lockrank.Mutex[lockrank.Transport]
	m  map[int32]tgidEntry
}

type tgidEntry struct {
	tgid  int32
	pidfd int
}

const tgidCacheMax = 8192

func newTgidCache() *tgidCache { return &tgidCache{m: map[int32]tgidEntry{}} }

// lookup returns tid's tgid. A tid that cannot be resolved (already gone)
// is its own tgid.
func (c *tgidCache) lookup(tid int32) int32 {
	if tid <= 0 {
		return tid
	}
	c.mu.Lock()
	e, ok := c.m[tid]
	c.mu.Unlock()
	if ok {
		if alive(e.pidfd) {
			return e.tgid
		}
		c.drop(tid, e)
	}
	// Pin the thread first, then read its tgid, then check it is still
	// the same thread: the answer is then about the pinned thread.
	fd, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
	if err != nil {
		return tid
	}
	tgid, err := readTgid(tid)
	if err != nil || !alive(fd) {
		unix.Close(fd)
		return tid
	}
	c.mu.Lock()
	if len(c.m) >= tgidCacheMax {
		for k, v := range c.m {
			unix.Close(v.pidfd)
			delete(c.m, k)
		}
	}
	if old, dup := c.m[tid]; dup {
		unix.Close(old.pidfd)
	}
	c.m[tid] = tgidEntry{tgid: tgid, pidfd: fd}
	c.mu.Unlock()
	return tgid
}

func (c *tgidCache) drop(tid int32, e tgidEntry) {
	c.mu.Lock()
	if cur, ok := c.m[tid]; ok && cur.pidfd == e.pidfd {
		delete(c.m, tid)
		unix.Close(e.pidfd)
	}
	c.mu.Unlock()
}

func (c *tgidCache) close() {
	c.mu.Lock()
	for k, v := range c.m {
		unix.Close(v.pidfd)
		delete(c.m, k)
	}
	c.mu.Unlock()
}

// alive reports whether the task behind a pidfd has not exited. poll is
// never restarted after a signal handler, even a zero-timeout one: a
// daemon whose process takes signals (an in-process mount under a SIGALRM
// timer) would otherwise see a live caller as gone and key it by its
// thread id.
func alive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

func readTgid(tid int32) (int32, error) {
	v, err := procfs.Field(fmt.Sprintf("/proc/%d/status", tid), "Tgid")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	return int32(n), err
}
