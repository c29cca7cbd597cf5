package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Asynchronous chunk copies (MEM_COPY_ASYNC, MEM_COPY_ASYNC_WAIT). Each
// core's default h2t queue has three DMA contexts: 0 for synchronous
// copies and 1 and 2, used in turn, for asynchronous ones. A copy is
// queued on the core's h2t ring with the next context's completion
// marker and, unless the caller passes "none" (-1), the previous one is
// waited for before the ioctl returns.

const (
	dmaCtxNone  = -1
	dmaCtxSync  = 0
	dmaCtxAsync = 1 // and 2
	// maxAsyncCopy is one ring batch: the driver's 8192-descriptor h2t
	// ring is waited on every 4096/2-16-1 = 2031 descriptors (plus the
	// last), each moving up to 64 KiB.
	maxAsyncCopy = 2032 * dmaPiece
)

type dmaContext struct {
	inUse bool   // the driver's flag: a copy was started and not yet waited for
	busy  bool   // a copy is in flight: its completion marker was not seen yet
	descs int    // descriptors of that copy (the wait's budget grows with them)
	seq   uint64 // copies started on this context
}

// h2tQueue is the contexts of one core's default h2t queue. Its lock is
// held to start copies and update the contexts, never while a copy is
// waited for: the driver holds its ring lock across the wait, but here a
// waiter holds nothing and re-checks the context afterwards.
type h2tQueue struct {
	mu  lockrank.Mutex[lockrank.AsyncCopy]
	ctx [3]dmaContext
}

// queueFor returns core nc's default h2t queue contexts.
func (t *h2tTable) queueFor(nc int) *h2tQueue {
	d := t.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if t.queues == nil {
		t.queues = map[int]*h2tQueue{}
	}
	q, ok := t.queues[nc]
	if !ok {
		q = &h2tQueue{}
		t.queues[nc] = q
	}
	return q
}

// nextDMAContext is the driver's rotation: none -> 1, 1 -> 2, 2 -> 1,
// sync -> sync.
func nextDMAContext(prev int32) (int32, bool) {
	switch prev {
	case dmaCtxNone, 2:
		return 1, true
	case 1:
		return 2, true
	case dmaCtxSync:
		return dmaCtxSync, true
	}
	return 0, false
}

// pairCore is the core whose h2t queue moves data between two chunks: the
// device side's (the destination's when both are), or the destination's
// for host to host.
func pairCore(src, dst *mempool.Chunk) int {
	if dst.Loc == mempool.LocDevice || src.Loc == mempool.LocHost {
		return dst.NCID
	}
	return src.NCID
}

// waitDMA waits for context i's copy in flight on core nc's ring, if any,
// until its marker shows or the driver's budget for it runs out (-1).
// Signals do not end it: the driver polls with udelay.
func (r *Request) waitDMA(nc int, q *h2tQueue, i int32) Result {
	q.mu.Lock()
	c := &q.ctx[i]
	if !c.busy {
		q.mu.Unlock()
		return 0
	}
	seq, descs := c.seq, c.descs
	q.mu.Unlock()
	d := r.Dev()
	res := d.h2t.driverRings[nc].wait(d, int(i), descs)
	q.mu.Lock()
	if c.seq == seq {
		c.busy = false // done, or given up on as the driver gives up
	}
	q.mu.Unlock()
	return res
}

// startCopy queues a copy on context i once the context's previous copy
// finished, and returns with it in flight.
func (r *Request) startCopy(nc int, q *h2tQueue, i int32, dst, src, size uint64) Result {
	d := r.Dev()
	for {
		if res := r.waitDMA(nc, q, i); res != 0 {
			return res
		}
		q.mu.Lock()
		c := &q.ctx[i]
		if c.busy {
			q.mu.Unlock() // another caller started one meanwhile: wait for it too
			continue
		}
		n, ok := d.h2t.driverRings[nc].copy(d, int(i), dst, src, size)
		if !ok {
			q.mu.Unlock()
			return Errno(syscall.EPERM)
		}
		c.inUse, c.busy, c.descs = true, true, n
		c.seq++
		q.mu.Unlock()
		return 0
	}
}

// The _IOC_NR 108 family: MEM_COPY_ASYNC and MEM_COPY_ASYNC64.
func memCopyAsync32(r *Request, v *ioctl.MemCopyAsync) Result {
	next, res := asyncCopy(r, v.SrcMemHandle, v.DstMemHandle, uint64(v.Size), uint64(v.SrcOffset), uint64(v.DstOffset), int32(v.PwaitHandle))
	if res != 0 {
		return res
	}
	v.WaitHandle = uint32(next)
	return copyOut(r, r.Arg, v)
}

func memCopyAsync64(r *Request, v *ioctl.MemCopyAsync64) Result {
	next, res := asyncCopy(r, v.SrcMemHandle, v.DstMemHandle, v.Size, v.SrcOffset, v.DstOffset, int32(v.PwaitHandle))
	if res != 0 {
		return res
	}
	v.WaitHandle = uint32(next)
	return copyOut(r, r.Arg, v)
}

// asyncCopy queues a copy on the next DMA context after prev and waits for
// prev's; it returns the context the caller waits on next.
func asyncCopy(r *Request, src, dst, size, srcOff, dstOff uint64, prev int32) (int32, Result) {
	d := r.Dev()
	sc, dc, res := r.usePair(src, srcOff, dst, dstOff, size)
	if res != 0 {
		return 0, res
	}
	next, ok := nextDMAContext(prev)
	if !ok {
		return 0, Errno(syscall.EINVAL)
	}
	nc := pairCore(sc, dc)
	q := d.h2t.queueFor(nc)
	q.mu.Lock()
	waitable := prev == dmaCtxNone || prev == next || q.ctx[prev].inUse
	q.mu.Unlock()
	if !waitable {
		return 0, Errno(syscall.EINVAL) // nothing to wait for on that context
	}
	if next != dmaCtxSync && size > maxAsyncCopy {
		return 0, Errno(syscall.EINVAL) // larger than one batch of the ring
	}
	// A synchronous copy larger than one ring batch goes batch by batch,
	// each waited for, as the driver's does.
	for size > maxAsyncCopy && next == dmaCtxSync {
		if res := r.startCopy(nc, q, next, dc.PA+dstOff, sc.PA+srcOff, maxAsyncCopy); res != 0 {
			return 0, res
		}
		if res := r.waitDMA(nc, q, next); res != 0 {
			return 0, res
		}
		dstOff, srcOff, size = dstOff+maxAsyncCopy, srcOff+maxAsyncCopy, size-maxAsyncCopy
	}
	if res := r.startCopy(nc, q, next, dc.PA+dstOff, sc.PA+srcOff, size); res != 0 {
		return 0, res
	}
	if prev != dmaCtxNone {
		if res := r.waitDMA(nc, q, prev); res != 0 {
			return 0, res
		}
		q.mu.Lock()
		q.ctx[prev].inUse = false
		q.mu.Unlock()
	}
	return next, 0
}

func memCopyAsyncWait(r *Request, v *ioctl.MemCopyAsyncWait) Result {
	d := r.Dev()
	sc, res1 := d.mem.chunkFor(v.SrcMemHandle)
	dc, res2 := d.mem.chunkFor(v.DstMemHandle)
	if res1 != 0 || res2 != 0 {
		return r.memErrno(Errno(syscall.EINVAL), false)
	}
	h := int32(v.PwaitHandle)
	if h < dmaCtxAsync || h > 2 {
		return Errno(syscall.EINVAL)
	}
	nc := pairCore(sc, dc)
	q := d.h2t.queueFor(nc)
	if res := r.waitDMA(nc, q, h); res != 0 {
		return res
	}
	q.mu.Lock()
	q.ctx[h].inUse = false
	q.mu.Unlock()
	return 0
}
