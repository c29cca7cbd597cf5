package device

import (
	"encoding/binary"
	"syscall"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Driver 2.27 gives each driver h2t copy queue (a core's default queue, a
// copy queue claimed with H2T_DMA_ALLOC_QUEUES) an async completion queue
// in host memory that user space maps: a 16-byte header (capacity, head,
// tail) and 1024 entries of 24 bytes. GET_ASYNC_H2T_DMA_COMPL_QUEUES hands
// out where they are. In 2.27 nothing posts completions to them yet.
const (
	asyncComplCapacity = 1024
	asyncComplEntry    = 24
	asyncComplHeader   = 16
	asyncComplSize     = asyncComplHeader + asyncComplCapacity*asyncComplEntry
)

// newAsyncComplQueue allocates and initialises one queue, or returns nil
// for drivers before 2.27. The driver charges it to core 0. Callers hold
// d.mu or run before the device serves requests.
func (t *h2tTable) newAsyncComplQueue() (*mempool.Chunk, error) {
	d := t.d
	if !d.sys.quirks.AsyncCompletionQueues {
		return nil, nil
	}
	c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: asyncComplSize, Host: true, MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
	if err != nil {
		return nil, err
	}
	// The driver gives it a handle, which shifts the numbering of the
	// handles processes get afterwards.
	if _, err := d.mem.pool.Handle(c); err != nil {
		d.mem.free(c, 0)
		return nil, err
	}
	if hdr, ok := d.chip.Mem().Slice(c.PA, asyncComplHeader); ok {
		clear(hdr)
		binary.LittleEndian.PutUint32(hdr, asyncComplCapacity)
	}
	return c, nil
}

// asyncComplQueueLocked returns the completion queue of queue q of engine
// eng, if that queue is a driver copy queue that has one.
func (t *h2tTable) asyncComplQueueLocked(eng, q int) *mempool.Chunk {
	for _, r := range t.driverRings {
		if r != nil && r.eng == eng && r.qid == q {
			return r.compl
		}
	}
	if cl := t.claims[[2]int{eng, q}]; cl != nil && cl.copy {
		return cl.compl
	}
	return nil
}

// asyncH2TComplQueues serves GET_ASYNC_H2T_DMA_COMPL_QUEUES: for each
// queue in the bitmap of core nc's h2t engine, the mmap offset and size
// of its completion queue. Like the driver it does not check who owns
// the queue, and a queue without one fails the whole request.
func asyncH2TComplQueues(r *Request, v *ioctl.GetAsyncH2TDMAComplQueues) Result {
	d := r.Dev()
	if int(v.NCID) >= d.sys.Arch.CoresPerDevice {
		return Errno(syscall.EINVAL)
	}
	v.ComplQueueInfo = [16]ioctl.H2TComplQueueInfo{}
	eng := d.sys.Arch.H2TEngine(int(v.NCID))
	d.mu.Lock()
	for q := range dma.QueuesPerEngine {
		if v.QIDBitmap&(1<<q) == 0 {
			continue
		}
		c := d.h2t.asyncComplQueueLocked(eng, q)
		if c == nil {
			d.mu.Unlock()
			return Errno(syscall.EINVAL)
		}
		v.ComplQueueInfo[q] = ioctl.H2TComplQueueInfo{MmapOffset: c.PA, MmapSize: asyncComplSize}
	}
	d.mu.Unlock()
	return copyOut(r, r.Arg, v)
}
