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
	mu  lockrank.Mutex[lockrank.Transport]
	m   map[int32]*tgidPin
	max int // entries; reaching it empties the cache
	// beforeHolds, when set (tests), runs between taking an entry and
	// asking its pin, where another lookup may evict it.
	beforeHolds func()
}

// tgidPin is a cached pin. Its descriptor is closed by whoever drops
// the last reference: the cache holds one while the entry is in the
// map, and each lookup one while it asks the pin, so an eviction never
// closes a descriptor a lookup is polling (whose number could meanwhile
// name another task's pidfd, or any other file).
type tgidPin struct {
	pin  procfs.Pin
	refs int // guarded by tgidCache.mu
}

const tgidCacheMax = 8192

func newTgidCache() *tgidCache { return &tgidCache{m: map[int32]*tgidPin{}, max: tgidCacheMax} }

// lookup returns tid's tgid. A tid that cannot be resolved (already gone)
// is its own tgid.
func (c *tgidCache) lookup(tid int32) int32 {
	if tid <= 0 {
		return tid
	}
	c.mu.Lock()
	e, ok := c.m[tid]
	if ok {
		e.refs++
	}
	c.mu.Unlock()
	if ok {
		if c.beforeHolds != nil {
			c.beforeHolds()
		}
		holds, tgid := e.pin.Holds(), e.pin.Tgid
		c.mu.Lock()
		if !holds && c.m[tid] == e {
			delete(c.m, tid)
			c.unrefLocked(e)
		}
		c.unrefLocked(e)
		c.mu.Unlock()
		if holds {
			return tgid
		}
	}
	pin, err := procfs.PinThread(tid)
	if err != nil {
		return tid
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		c.clearLocked()
	}
	if old, dup := c.m[tid]; dup {
		c.unrefLocked(old)
	}
	c.m[tid] = &tgidPin{pin: pin, refs: 1}
	c.mu.Unlock()
	return pin.Tgid
}

// unrefLocked drops a reference to e, closing its pin with the last.
func (c *tgidCache) unrefLocked(e *tgidPin) {
	if e.refs--; e.refs == 0 {
		unix.Close(e.pin.Fd)
	}
}

// clearLocked empties the cache.
func (c *tgidCache) clearLocked() {
	for k, e := range c.m {
		delete(c.m, k)
		c.unrefLocked(e)
	}
}

func (c *tgidCache) close() {
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}

// alive reports whether the task behind a pidfd has not exited.
func alive(pidfd int) bool { return procfs.Alive(pidfd) }
