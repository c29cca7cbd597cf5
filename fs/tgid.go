package fs

import (
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// tgidCache maps the thread id FUSE reports to the thread-group id the
// driver keys processes by. Each entry holds a pin of the thread (its
// pidfd, or before Linux 6.9 its process's) so a recycled tid is never
// mistaken for the thread it replaced.
type tgidCache struct {
	mu lockrank.Mutex[lockrank.Transport]
	m  map[int32]procfs.Pin
}

const tgidCacheMax = 8192

func newTgidCache() *tgidCache { return &tgidCache{m: map[int32]procfs.Pin{}} }

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
		if e.Holds() {
			return e.Tgid
		}
		c.drop(tid, e)
	}
	pin, err := procfs.PinThread(tid)
	if err != nil {
		return tid
	}
	c.mu.Lock()
	if len(c.m) >= tgidCacheMax {
		for k, v := range c.m {
			unix.Close(v.Fd)
			delete(c.m, k)
		}
	}
	if old, dup := c.m[tid]; dup {
		unix.Close(old.Fd)
	}
	c.m[tid] = pin
	c.mu.Unlock()
	return pin.Tgid
}

func (c *tgidCache) drop(tid int32, e procfs.Pin) {
	c.mu.Lock()
	if cur, ok := c.m[tid]; ok && cur.Fd == e.Fd {
		delete(c.m, tid)
		unix.Close(e.Fd)
	}
	c.mu.Unlock()
}

func (c *tgidCache) close() {
	c.mu.Lock()
	for k, v := range c.m {
		unix.Close(v.Fd)
		delete(c.m, k)
	}
	c.mu.Unlock()
}

// alive reports whether the task behind a pidfd has not exited.
func alive(pidfd int) bool { return procfs.Alive(pidfd) }
