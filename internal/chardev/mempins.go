package chardev

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/internal/procfs"
)

// memPins caches, by thread id, opens of callers' /proc/TID/mem, since an
// open per ioctl would cost about as much as the rest of the call. Each
// comes with a pidfd of the thread, opened first: while that pidfd says
// the thread lives, the thread has had the id since before the memory
// was opened, so the open is that thread's memory. A notification still
// live after that check is the thread's own (ids are unique among live
// tasks), so the pin reaches exactly the caller.
//
// An exec changes a thread's address space but not its id: every exec
// the filter reports retires the pins made before it (gen), and a pin
// whose address space is gone anyway (a thread that took over its
// process's id in an exec) reads nothing, which Task.Repin answers.
type memPins struct {
	mu  lockrank.Mutex[lockrank.Transport]
	m   map[uint32]*memPin
	gen atomic.Uint64
}

// memPin is one cached pin. Its descriptors are closed with the last
// reference: the cache holds one while it is in the map, and each call
// using it one.
type memPin struct {
	pidfd, mem int
	gen        uint64
	refs       int // guarded by memPins.mu
}

// memPinsMax bounds the cache; reaching it empties it.
const memPinsMax = 4096

func newMemPins() *memPins { return &memPins{m: map[uint32]*memPin{}} }

// get returns a pin of thread tid's memory, with a reference for the
// caller (put gives it back). Only a validity check of the notification
// made after get proves the pin is the caller's.
func (p *memPins) get(tid uint32) (*memPin, error) {
	gen := p.gen.Load()
	p.mu.Lock()
	e := p.m[tid]
	if e != nil && e.gen == gen {
		e.refs++
	} else {
		e = nil
	}
	p.mu.Unlock()
	if e != nil {
		if procfs.Alive(e.pidfd) {
			return e, nil
		}
		p.drop(tid, e)
		p.put(e)
	}
	return p.fresh(tid, gen)
}

// fresh pins tid anew and caches the pin (where the kernel gives thread
// pidfds: without one, Linux < 6.9, nothing tells the pin still holds).
func (p *memPins) fresh(tid uint32, gen uint64) (*memPin, error) {
	pidfd, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
	if err != nil {
		pidfd = -1
	}
	mem, err := openMem(tid)
	if err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return nil, err
	}
	e := &memPin{pidfd: pidfd, mem: mem, gen: gen, refs: 1}
	if pidfd < 0 {
		return e, nil
	}
	p.mu.Lock()
	if len(p.m) >= memPinsMax {
		for k, old := range p.m {
			delete(p.m, k)
			p.unrefLocked(old)
		}
	}
	if old := p.m[tid]; old != nil {
		p.unrefLocked(old)
	}
	p.m[tid] = e
	e.refs++
	p.mu.Unlock()
	return e, nil
}

// repin replaces e, whose address space turned out to be gone, with a
// fresh pin of tid.
func (p *memPins) repin(tid uint32, e *memPin) (*memPin, error) {
	p.drop(tid, e)
	return p.fresh(tid, p.gen.Load())
}

// drop takes e out of the cache, if it is still tid's entry.
func (p *memPins) drop(tid uint32, e *memPin) {
	p.mu.Lock()
	if p.m[tid] == e {
		delete(p.m, tid)
		p.unrefLocked(e)
	}
	p.mu.Unlock()
}

// put gives back a reference get or repin returned.
func (p *memPins) put(e *memPin) {
	p.mu.Lock()
	p.unrefLocked(e)
	p.mu.Unlock()
}

func (p *memPins) unrefLocked(e *memPin) {
	if e.refs--; e.refs == 0 {
		unix.Close(e.mem)
		if e.pidfd >= 0 {
			unix.Close(e.pidfd)
		}
	}
}

// execed retires every pin made so far: a task that execs keeps its id
// with another address space.
func (p *memPins) execed() { p.gen.Add(1) }

// close empties the cache.
func (p *memPins) close() {
	p.mu.Lock()
	for k, e := range p.m {
		delete(p.m, k)
		p.unrefLocked(e)
	}
	p.mu.Unlock()
}

func (e *memPin) String() string { return fmt.Sprintf("pin(mem %d, pidfd %d)", e.mem, e.pidfd) }
