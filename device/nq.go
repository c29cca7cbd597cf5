package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Notification queues: per core (and per TOP_SP) up to 96 queues, id =
// type*16 + engine, each a power-of-two ring of device lifespan that the
// hardware writes and the runtime polls through a mapping. The rings are
// allocated and kept as the driver keeps them (until the core is reset)
// and bound to their NOTIFIC slot, where the emulated chip writes records
// (the chip's NOTIFIC blocks, chip/bar0.go and chip/doorbell.go).

const (
	maxNQ          = 96 // MAX_NQ_SUPPORTED
	nqPerType      = 16
	nqDevTypeCore  = ioctl.NQDevTypeCore
	nqDevTypeTopSP = ioctl.NQDevTypeTopSP
	nqNoMmap       = ^uint64(0) // mmap_offset of a ring in device memory
)

// nqID is the driver's u8 arithmetic.
func nqID(nqType uint32, engine uint8) uint8 { return uint8(nqType*nqPerType) + engine }

// nqTable is a device's notification rings by core and by TOP_SP, and
// queue id. It lives under the device lock and reaches back to its
// device for memory and the chip's NOTIFIC slots.
type nqTable struct {
	d     *Device
	core  [maxCoreSlots][maxNQ]*mempool.Chunk
	topSP [16][maxNQ]*mempool.Chunk
}

// nqSpec is one init request, whichever command carried it.
type nqSpec struct {
	devType, devID, nqType, engine, size, channel uint32
	host, force                                   bool
}

// initQueue allocates (or reuses) the ring of the queue spec names, as
// nnq_init and ts_nq_init do. It takes the device lock.
func (t *nqTable) initQueue(r *Request, s nqSpec) (*mempool.Chunk, Result) {
	d := t.d
	table, nc, res := t.target(s.devType, s.devID, s.size)
	if res != 0 {
		return nil, res
	}
	id := nqID(s.nqType, uint8(s.engine))
	if id >= maxNQ {
		return nil, Errno(syscall.EINVAL)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := table[id]
	if c != nil && !s.force {
		return c, 0 // the driver reuses the ring as is, whatever size is asked
	}
	req := mempool.AllocRequest{Size: uint64(s.size), Host: s.host, Channel: s.channel, NCID: nc, MemType: mempool.MemTypeNotificationHost, Lifespan: mempool.LifespanDevice, PID: r.Caller.Tgid}
	if !s.host {
		req.MemType = mempool.MemTypeNotificationDevice
		req.Align = uint64(s.size) // device rings are aligned to their size
	}
	fresh, err := d.mem.pool.Alloc(req)
	if err != nil {
		return nil, errnoOf(err)
	}
	d.chip.Fill(fresh.PA, fresh.Size)
	table[id] = fresh
	t.program(s, fresh)
	if c != nil {
		d.mem.free(c, 0)
	}
	return fresh, 0
}

// program binds a fresh ring to its NOTIFIC slot (the engine index), as
// the driver writes base and size. TRACE_DMA queues belong to the DMA
// engines' own notification blocks, which are not emulated.
func (t *nqTable) program(s nqSpec, c *mempool.Chunk) {
	d := t.d
	if s.nqType == ioctl.NQTypeTraceDMA { // in a DMA engine's own notification block
		return
	}
	d.chip.ProgramNQ(s.devType == nqDevTypeTopSP, int(uint8(s.devID)), int(s.engine), c.PA, s.size)
}

// target checks the queue's owner and picks its table and core.
func (t *nqTable) target(devType, devID uint32, size uint32) (*[maxNQ]*mempool.Chunk, uint32, Result) {
	d := t.d
	if size&(size-1) != 0 {
		return nil, 0, Errno(syscall.EINVAL) // rings are powers of two
	}
	a := d.sys.Arch
	switch devType {
	case nqDevTypeCore:
		nc := uint32(uint8(devID))
		if nc >= uint32(a.CoresPerDevice) || a.ActiveCoreMap&(1<<nc) == 0 {
			return nil, 0, Errno(syscall.EINVAL)
		}
		return &t.core[nc], nc, 0
	case nqDevTypeTopSP:
		ts := uint32(uint8(devID))
		if ts >= uint32(a.TopSPsPerDevice) {
			return nil, 0, Errno(syscall.EINVAL)
		}
		return &t.topSP[ts], ts / uint32(a.TopSPsPerDevice/a.CoresPerDevice), 0
	}
	return nil, 0, Errno(syscall.ENOSYS)
}

func nqMmapOffset(c *mempool.Chunk) uint64 {
	if c.Loc == mempool.LocHost {
		return c.PA
	}
	return nqNoMmap
}

// notificationsInit serves NOTIFICATIONS_INIT_V2.
func notificationsInit(r *Request, v *ioctl.NotificationsInitV2) Result {
	c, h, res := initNQFor(r, nqSpec{v.NQDevType, v.NQDevID, v.NQType, v.EngineIndex, v.Size, v.DramChannel, v.OnHostMemory != 0, false})
	if res != 0 {
		return res
	}
	v.MmapOffset, v.MemHandle = nqMmapOffset(c), h
	return copyOut(r, r.Arg, v)
}

// notificationsInitRealloc serves NOTIFICATIONS_INIT_WITH_REALLOC_V2.
func notificationsInitRealloc(r *Request, v *ioctl.NotificationsInitWithReallocV2) Result {
	c, h, res := initNQFor(r, nqSpec{v.NQDevType, v.NQDevID, v.NQType, v.EngineIndex, v.Size, v.DramChannel, v.OnHostMemory != 0, v.ForceAllocMem != 0})
	if res != 0 {
		return res
	}
	v.MmapOffset, v.MemHandle = nqMmapOffset(c), h
	return copyOut(r, r.Arg, v)
}

// initNQFor initialises a queue for the caller and hands out its handle.
func initNQFor(r *Request, s nqSpec) (*mempool.Chunk, uint64, Result) {
	d := r.Dev()
	c, res := d.nq.initQueue(r, s)
	if res != 0 {
		return nil, 0, res
	}
	h, err := d.mem.pool.Handle(c)
	if err != nil {
		return nil, 0, errnoOf(err)
	}
	return c, h, 0
}

// notificationsInitV1: cores only, host memory only, no handle.
func notificationsInitV1(r *Request, v *ioctl.NotificationsInitV1) Result {
	c, res := r.Dev().nq.initQueue(r, nqSpec{devType: nqDevTypeCore, devID: v.NCID, nqType: v.NQType, engine: v.EngineIndex, size: v.Size, host: true})
	if res != 0 {
		return res
	}
	v.MmapOffset = nqMmapOffset(c)
	return copyOut(r, r.Arg, v)
}

// destroyLocked halts and frees a core's queues and its TOP_SPs' (at
// reset).
func (t *nqTable) destroyLocked(nc int) {
	d := t.d
	a := d.sys.Arch
	if nc >= a.CoresPerDevice {
		return
	}
	per := a.TopSPsPerDevice / a.CoresPerDevice
	d.chip.HaltNQs(nc, per)
	for i, c := range t.core[nc] {
		if c != nil {
			d.mem.free(c, 0)
			t.core[nc][i] = nil
		}
	}
	for ts := nc * per; ts < (nc+1)*per; ts++ {
		for i, c := range t.topSP[ts] {
			if c != nil {
				d.mem.free(c, 0)
				t.topSP[ts][i] = nil
			}
		}
	}
}
