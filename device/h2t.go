package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Extra queues on a core's h2t engine (H2T_DMA_ALLOC_QUEUES and
// _FREE_QUEUES). A copy queue gets driver rings and serves zero-copy
// DMA for the core; a service queue is only reserved, for the caller to
// program with DMA_QUEUE_INIT. Both last until freed or until their
// core is reset.

const (
	// h2tRingDescs is the size of the driver's h2t rings: 4096 descriptors
	// plus a cache line of completions, rounded up to a power of two.
	h2tRingDescs = 8192
	// h2tCompletionSize is the completion area of a driver h2t queue.
	h2tCompletionSize = 4096
)

// h2tTable is the driver's h2t queues: each core's default queue (its
// driver rings and DMA contexts) and the extra queues claimed with
// H2T_DMA_ALLOC_QUEUES. Everything but queues' own locks lives under the
// device lock; the table reaches back to its device for memory and
// engines.
type h2tTable struct {
	d      *Device
	claims map[[2]int]*h2tClaim // claimed queues by (engine, queue)
	// driverRings are the cores' default h2t queues (h2tring.go).
	driverRings []*driverRing
	queues      map[int]*h2tQueue // per core: DMA contexts of its default queue
}

// h2tClaim is one claimed queue of an h2t engine.
type h2tClaim struct {
	nc    int
	copy  bool             // driver-owned copy queue (else a service queue)
	rings []*mempool.Chunk // TX, RX and completion area of a copy queue
	compl *mempool.Chunk   // its async completion queue (driver 2.27), also in rings
}

// claimLocked claims the first free non-default queue of core nc's h2t
// engine; copy queues get their rings programmed.
func (t *h2tTable) claimLocked(nc int, copyQueue bool, tgid int32) (int, Result) {
	d := t.d
	eng := d.sys.Arch.H2TEngine(nc)
	for q := range dma.QueuesPerEngine {
		key := [2]int{eng, q}
		if d.sys.Arch.IsDefaultH2T(eng, q) || t.claims[key] != nil {
			continue
		}
		cl := &h2tClaim{nc: nc, copy: copyQueue}
		if !copyQueue {
			t.claims[key] = cl
			d.dma.owner[key] = tgid
			return q, 0
		}
		for _, size := range []uint64{h2tRingDescs * dmadesc.Size, h2tRingDescs * dmadesc.Size, h2tCompletionSize} {
			c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: size, Host: true, NCID: uint32(nc), MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
			if err != nil {
				t.freeRingsLocked(cl)
				return 0, errnoOf(err)
			}
			cl.rings = append(cl.rings, c)
		}
		c, err := t.newAsyncComplQueue()
		if err != nil {
			t.freeRingsLocked(cl)
			return 0, errnoOf(err)
		}
		if c != nil {
			cl.compl = c
			cl.rings = append(cl.rings, c)
		}
		tx := dma.RingSpec{Base: cl.rings[0].PA, Size: h2tRingDescs}
		rx := dma.RingSpec{Base: cl.rings[1].PA, Size: h2tRingDescs}
		if errno := d.chip.Engine(eng).InitQueue(q, tx, rx); errno != 0 {
			t.freeRingsLocked(cl)
			return 0, Errno(errno)
		}
		t.claims[key] = cl
		return q, 0
	}
	return 0, Errno(syscall.EPERM) // no free queue
}

func (t *h2tTable) freeRingsLocked(cl *h2tClaim) {
	d := t.d
	for _, c := range cl.rings {
		d.mem.free(c, 0)
	}
	cl.rings = nil
}

// releaseLocked frees queue q of core nc's engine.
func (t *h2tTable) releaseLocked(nc, q int) {
	d := t.d
	eng := d.sys.Arch.H2TEngine(nc)
	key := [2]int{eng, q}
	cl := t.claims[key]
	if cl == nil {
		return
	}
	if cl.copy {
		d.chip.Engine(eng).DisableQueue(q)
		t.freeRingsLocked(cl)
	} else {
		delete(d.dma.owner, key)
	}
	delete(t.claims, key)
}

// releaseCoreLocked frees every queue claimed for core nc (core reset).
func (t *h2tTable) releaseCoreLocked(nc int) {
	for key, cl := range t.claims {
		if cl.nc == nc {
			t.releaseLocked(nc, key[1])
		}
	}
}

// isCopyQueue reports whether queue q of core nc's h2t engine serves
// that core's driver copies: its default queue or a claimed copy queue.
func (t *h2tTable) isCopyQueue(nc, q int) bool {
	d := t.d
	if q == d.sys.Arch.H2TDefaultQueue(nc) {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cl := t.claims[[2]int{d.sys.Arch.H2TEngine(nc), q}]
	return cl != nil && cl.copy && cl.nc == nc
}

// isDriverRing reports whether (eng, q) holds driver rings that
// DMA_QUEUE_INIT must not replace.
func (t *h2tTable) isDriverRingLocked(eng, q int) bool {
	d := t.d
	if d.sys.Arch.IsDefaultH2T(eng, q) {
		return true
	}
	cl := t.claims[[2]int{eng, q}]
	return cl != nil && cl.copy
}

func h2tAllocQueues(r *Request, v *ioctl.H2TDMAAllocQueues) Result {
	d := r.Dev()
	if int(v.NCID) >= d.sys.Arch.CoresPerDevice || int(v.CopyQueueCnt)+int(v.ServiceQueueCnt) >= dma.QueuesPerEngine {
		return Errno(syscall.E2BIG)
	}
	d.mu.Lock()
	var claimed []int
	fail := func(res Result) Result {
		for _, q := range claimed {
			d.h2t.releaseLocked(int(v.NCID), q)
		}
		d.mu.Unlock()
		return res
	}
	v.CopyQueueBmap, v.ServiceQueueBmap = 0, 0
	for i := range int(v.CopyQueueCnt) + int(v.ServiceQueueCnt) {
		copyQueue := i < int(v.CopyQueueCnt)
		q, res := d.h2t.claimLocked(int(v.NCID), copyQueue, r.Caller.Tgid)
		if res != 0 {
			return fail(res)
		}
		claimed = append(claimed, q)
		if copyQueue {
			v.CopyQueueBmap |= 1 << q
		} else {
			v.ServiceQueueBmap |= 1 << q
		}
	}
	d.mu.Unlock()
	v.CopyDefaultQueue = uint32(d.sys.Arch.H2TDefaultQueue(int(v.NCID)))
	if n := copyOut(r, r.Arg, v); n != 0 {
		return n
	}
	return 0
}

func h2tFreeQueues(r *Request, v *ioctl.H2TDMAFreeQueues) Result {
	d := r.Dev()
	nc := int(v.NCID)
	if nc >= d.sys.Arch.CoresPerDevice {
		return Errno(syscall.E2BIG)
	}
	eng := d.sys.Arch.H2TEngine(nc)
	d.mu.Lock()
	defer d.mu.Unlock()
	var res Result
	for q := range dma.QueuesPerEngine {
		if v.QueueBmap&(1<<q) == 0 || d.sys.Arch.IsDefaultH2T(eng, q) {
			continue
		}
		if cl := d.h2t.claims[[2]int{eng, q}]; cl == nil || cl.nc != nc {
			res = Errno(syscall.ENXIO)
			continue
		}
		d.h2t.releaseLocked(nc, q)
	}
	return res
}
