package fs

import (
	goruntime "runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// behalfTable names the task an on-behalf open is for. The seccomp
// supervisor opens a device's FUSE file for a task (OpenFor), and the
// FUSE request that open makes names only the thread that made it, this
// daemon's: the kernel's protocol has no field to carry the real
// opener. So the opening thread is locked and entered here for the
// open's duration, and a FUSE request from it is attributed to the task.
// The direct descriptors (fs.Direct) need no table: the supervisor hands
// them the task.
type behalfTable struct {
	mu     lockrank.Mutex[lockrank.Transport]
	byTid  map[int32]int32 // daemon thread -> the task it opens a device for
	active atomic.Int32    // len(byTid), read without the lock on every request
}

func newBehalfTable() *behalfTable { return &behalfTable{byTid: map[int32]int32{}} }

// openAs runs open on a locked thread entered as opening for task tid.
func (b *behalfTable) openAs(tid int32, open func() (int, error)) (int, error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	self := int32(unix.Gettid())
	b.mu.Lock()
	b.byTid[self] = tid
	b.active.Add(1)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.byTid, self)
		b.active.Add(-1)
		b.mu.Unlock()
	}()
	return open()
}

// caller is the task a request from thread tid is for: tid itself unless
// it is a daemon thread opening on a task's behalf.
func (b *behalfTable) caller(tid int32) int32 {
	if b.active.Load() == 0 {
		return tid
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if target, ok := b.byTid[tid]; ok {
		return target
	}
	return tid
}
