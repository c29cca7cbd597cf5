package device

import (
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// DMA engine and queue commands over the device's emulated engines.

const (
	// dummyRingDescs is the ring a queue falls back to when its owner
	// exits, so a stale doorbell can never reach freed memory.
	dummyRingDescs = 64
	// queueInitBatchMax is the entry count DMA_QUEUE_INIT_BATCH refuses
	// (its array has 256 entries; 256 and above are E2BIG).
	queueInitBatchMax = 256
	queueTypeTX       = 0
	queueTypeRX       = 1
)

// dmaState is the driver's bookkeeping around the chip's engines. It
// lives under the device lock and reaches back to its device for the
// chip and memory.
type dmaState struct {
	d     *Device
	owner map[[2]int]int32 // queues initialised by a process, by (engine, queue)
	// hostDriven marks queues rung with DMA_QUEUE_COPY_START since their
	// init; the others are device-driven (the exec queue), armed by the
	// chip at a doorbell.
	hostDriven map[[2]int]bool
	dummy      *mempool.Chunk
}

// init sets up the driver's side of the engines: its tables and the
// dummy ring.
func (s *dmaState) init(d *Device) error {
	s.d = d
	s.owner = map[[2]int]int32{}
	s.hostDriven = map[[2]int]bool{}
	c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: dummyRingDescs * dmadesc.Size, Host: true, MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
	if err != nil {
		return err
	}
	s.dummy = c
	return nil
}

// engine returns engine id: EINVAL beyond the driver's array. Slots the
// driver has but the chip lacks (V2: 34..131) have no registers; the
// driver would fault on them, here they are EINVAL too.
func (d *Device) engine(id uint32) (*dma.Engine, Result) {
	if e := d.chip.Engine(int(min(id, 1<<30))); e != nil {
		return e, 0
	}
	return nil, Errno(syscall.EINVAL)
}

// ringChunk resolves a ring handle: 0 or an invalid handle mean no ring.
func (r *Request) ringChunk(h uint64) (*mempool.Chunk, Result) {
	if h == 0 {
		return nil, 0
	}
	c, res := r.Dev().mem.chunkFor(h)
	if res != 0 {
		return nil, 0
	}
	if _, res := r.useChunk(h); res != 0 {
		return nil, res
	}
	return c, 0
}

func ringSpec(c *mempool.Chunk, count uint32) dma.RingSpec {
	if c == nil {
		return dma.RingSpec{Size: count}
	}
	return dma.RingSpec{Base: c.PA, Size: count}
}

// queueInit is one DMA_QUEUE_INIT entry, in the driver's order.
func (r *Request) queueInit(v *ioctl.DMAQueueInit) Result {
	tx, res1 := r.ringChunk(v.TXHandle)
	rx, res2 := r.ringChunk(v.RXHandle)
	rxc, res3 := r.ringChunk(v.RXCHandle)
	if res := firstError(res1, res2, res3); res != 0 {
		return res
	}
	d := r.Dev()
	e, res := d.engine(v.EngID)
	if res != 0 {
		return res
	}
	if v.QID >= dma.QueuesPerEngine {
		return Errno(syscall.EINVAL)
	}
	d.mu.Lock()
	if d.h2t.isDriverRingLocked(int(v.EngID), int(v.QID)) {
		d.mu.Unlock()
		return Errno(syscall.EALREADY)
	}
	d.dma.owner[[2]int{int(v.EngID), int(v.QID)}] = r.Caller.Tgid
	delete(d.dma.hostDriven, [2]int{int(v.EngID), int(v.QID)})
	d.mu.Unlock()
	if rxc != nil && uint64(v.RXDescCount)*dmadesc.Size > rxc.Size {
		return Errno(syscall.EINVAL)
	}
	if rxc != nil {
		// Completion rings are not supported; the driver's ring alignment
		// checks, which come first, fail with the same EPERM.
		return Errno(syscall.EPERM)
	}
	return Errno(e.InitQueue(int(v.QID), ringSpec(tx, v.TXDescCount), ringSpec(rx, v.RXDescCount)))
}

func dmaQueueInit(r *Request) Result {
	var v ioctl.DMAQueueInit
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return r.copyInDenied(n)
	}
	return r.queueInit(&v)
}

func dmaQueueInitBatch(r *Request) Result {
	var v ioctl.DMAQueueInitBatch
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return r.copyInDenied(n)
	}
	if v.Count >= queueInitBatchMax {
		return Errno(syscall.E2BIG)
	}
	for i := range v.Count {
		if res := r.queueInit(&v.Entries[i]); res != 0 {
			return res
		}
	}
	return 0
}

// engineArg reads a command's struct and resolves the engine it names.
func engineArg[T any](r *Request, engID func(*T) uint32) (v T, e *dma.Engine, res Result) {
	if res = copyIn(r, r.Arg, &v); res != 0 {
		return v, nil, res
	}
	e, res = r.Dev().engine(engID(&v))
	return v, e, res
}

// dmaCopyStart rings a queue's doorbells. An RX count of 0 crashes the
// driver (it asserts 1..ring size); here it is EINVAL.
func dmaCopyStart(r *Request) Result {
	v, e, res := engineArg(r, func(v *ioctl.DMAQueueCopyStart) uint32 { return v.EngID })
	if res != 0 {
		return res
	}
	if v.QID < dma.QueuesPerEngine && v.RXDescCount == 0 {
		return Errno(syscall.EINVAL)
	}
	if v.QID < dma.QueuesPerEngine {
		d := r.Dev()
		d.mu.Lock()
		d.dma.hostDriven[[2]int{int(v.EngID), int(v.QID)}] = true
		d.mu.Unlock()
	}
	return Errno(e.Doorbell(int(v.QID), v.TXDescCount, v.RXDescCount))
}

// dmaAckCompleted advances the software completion index. The driver
// asserts the ring size is a power of two; here that is EINVAL.
func dmaAckCompleted(r *Request) Result {
	v, e, res := engineArg(r, func(v *ioctl.DMAAckCompleted) uint32 { return v.EngID })
	if res != 0 {
		return res
	}
	if v.QID >= dma.QueuesPerEngine {
		return Errno(syscall.EINVAL)
	}
	return Errno(e.Ack(int(v.QID), v.Count))
}

func dmaEngSetState(r *Request) Result {
	v, e, res := engineArg(r, func(v *ioctl.DMAEngSetState) uint32 { return v.EngID })
	if res != 0 {
		return res
	}
	e.SetState(dmadesc.State(v.State)) // other values are refused inside, yet the ioctl succeeds
	return 0
}

func dmaEngGetState(r *Request) Result {
	v, e, res := engineArg(r, func(v *ioctl.DMAEngGetState) uint32 { return v.EngID })
	if res != 0 {
		return res
	}
	st := e.State()
	out := ioctl.DMAEngState{RevisionID: st.RevisionID, MaxQueues: st.MaxQueues, NumQueues: st.NumQueues, TXState: uint32(st.TX), RXState: uint32(st.RX)}
	return copyOut(r, v.State, &out)
}

// dmaQueueGetState: the driver indexes its arrays without checking; out of
// range engines and queues are EINVAL here.
func dmaQueueGetState(r *Request) Result {
	v, e, res := engineArg(r, func(v *ioctl.DMAQueueGetState) uint32 { return v.EngID })
	if res != 0 {
		return res
	}
	if v.QID >= dma.QueuesPerEngine {
		return Errno(syscall.EINVAL)
	}
	conv := func(s dma.QueueState) ioctl.DMAQueueState {
		return ioctl.DMAQueueState{HWStatus: s.HWStatus, SWStatus: s.SWStatus, BaseAddr: s.Base, Length: s.Length, HeadPointer: s.Head, TailPointer: s.Tail}
	}
	tx, rx := conv(e.QueueState(int(v.QID), dma.TX)), conv(e.QueueState(int(v.QID), dma.RX))
	if n := copyOut(r, v.TX, &tx); n != 0 {
		return n
	}
	return copyOut(r, v.RX, &rx)
}

// dmaCopyDescriptors writes descriptors into a ring chunk after checking
// every host address they name, 64 KiB at a time as the driver does:
// pieces before a failing one stay written.
func dmaCopyDescriptors32(r *Request, v *ioctl.DMACopyDescriptors) Result {
	return copyDescriptors(r, v.MemHandle, v.Buffer, uint64(v.Offset), v.NumDescs, v.QueueType)
}

func dmaCopyDescriptors64(r *Request, v *ioctl.DMACopyDescriptors64) Result {
	return copyDescriptors(r, v.MemHandle, v.Buffer, v.Offset, v.NumDescs, v.QueueType)
}

func copyDescriptors(r *Request, h, buf, off uint64, num, qtype uint32) Result {
	size := uint64(num) * dmadesc.Size
	c, res := r.useRange(h, off, size)
	if res != 0 {
		return res
	}
	d := r.Dev()
	piece := make([]byte, min(size, dmaPiece))
	for done := uint64(0); done < size; {
		n := min(size-done, dmaPiece)
		p := piece[:n]
		if res := r.readUser(p, buf+done); res != 0 {
			return res
		}
		for i := 0; i < len(p); i += dmadesc.Size {
			if res := r.checkDescAddr(dmadesc.Decode(p[i:]).Addr, qtype); res != 0 {
				return res
			}
		}
		mem, release, res := d.mem.view(c, off+done, n)
		if res != 0 {
			return res
		}
		copy(mem, p)
		release()
		done += n
	}
	d.chip.Restage() // a device-fed queue may wait for these descriptors
	return 0
}

// checkDescAddr is the driver's check of one descriptor's buffer address:
// a host address must lie in a host chunk of a device the caller is
// attached to. Device addresses pass unchecked, except in strict mode,
// where an address inside another process's chunk is refused.
func (r *Request) checkDescAddr(pa uint64, qtype uint32) Result {
	if qtype != queueTypeTX && qtype != queueTypeRX {
		return Errno(syscall.EPERM)
	}
	s := r.Sys()
	if s.Arch.IsHostAddress(pa) {
		var owner *mempool.Chunk
		for _, d := range s.Devices {
			if !d.IsAttached(r.Caller.Tgid) {
				continue
			}
			if c, ok := d.mem.pool.Containing(pa); ok && c.Loc == mempool.LocHost {
				owner = c
				break
			}
		}
		if owner == nil {
			return Errno(syscall.EINVAL)
		}
		return r.strictDescTarget(owner, pa)
	}
	if c, ok := r.Dev().mem.pool.Containing(pa); ok {
		return r.strictDescTarget(c, pa)
	}
	return 0
}

// strictDescTarget refuses, in strict mode, a descriptor aimed at a chunk
// of another process that was not handed to the caller.
func (r *Request) strictDescTarget(c *mempool.Chunk, pa uint64) Result {
	s := r.Sys()
	if !s.strict || c.PID == 0 || c.PID == r.Caller.Tgid {
		return 0
	}
	d := r.Dev()
	if d.mem.pool.SharedWith(c, r.Caller.Tgid) {
		return 0
	}
	d.log.WithFields(logrus.Fields{"address": pa, "owner": c.PID, "caller": r.Caller.Tgid}).Warn("strict: descriptor aimed at another process's chunk refused")
	return Errno(syscall.EPERM)
}

// dmaDescriptorCopyout reads descriptors back from a queue's ring. As on
// the driver, a device-memory ring is read from its start whatever
// start_index says. Reads the driver would make past the ring's chunk
// are EINVAL here.
func dmaDescriptorCopyout(r *Request, v *ioctl.DMADescriptorCopyout) Result {
	if v.Count == 0 {
		return Errno(syscall.EINVAL)
	}
	d := r.Dev()
	e, res := d.engine(v.EngID)
	if res != 0 || v.QID >= dma.QueuesPerEngine {
		return Errno(syscall.EINVAL)
	}
	var side dma.Dir
	switch v.Type {
	case queueTypeTX:
		side = dma.TX
	case queueTypeRX:
		side = dma.RX
	default:
		return Errno(syscall.EINVAL)
	}
	ring := e.Ring(int(v.QID), side)
	if uint64(v.Count)+uint64(v.StartIndex) > uint64(ring.Size) {
		return Errno(syscall.EFBIG)
	}
	c, ok := d.mem.pool.Containing(ring.Base)
	if !ok {
		return Errno(syscall.EINVAL)
	}
	total := uint64(v.Count) * dmadesc.Size
	from := ring.Base - c.PA
	if c.Loc == mempool.LocHost {
		from = uint64(v.StartIndex) * dmadesc.Size
	}
	if from+total > c.Size {
		return Errno(syscall.EINVAL)
	}
	mem, release, res := d.mem.view(c, from, total)
	if res != 0 {
		return res
	}
	defer release()
	return copyOutBytes(r, v.Buffer, mem)
}

// releaseQueuesLocked is the driver's cleanup when tgid detaches: each
// queue it initialised goes back to the dummy ring, except the NX's.
func (s *dmaState) releaseQueuesLocked(tgid int32) {
	d := s.d
	f := d.sys.Arch
	for key, owner := range s.owner {
		eng, q := key[0], key[1]
		if owner != tgid || eng >= f.DMAEnginesResetOnExit {
			continue
		}
		delete(s.owner, key)
		e := d.chip.Engine(eng)
		if f.IsNXQueue(eng, q) || e == nil {
			continue
		}
		dummy := dma.RingSpec{Base: s.dummy.PA, Size: dummyRingDescs}
		if errno := e.InitQueue(q, dummy, dummy); errno != 0 {
			d.log.WithFields(logrus.Fields{"engine": eng, "queue": q, "errno": errno}).Warn("queue reset at exit failed")
		}
	}
}

// OwnedQueues counts the queues some process initialised and still owns
// on the engines the driver resets at process exit.
func (d *Device) OwnedQueues() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for key := range d.dma.owner {
		if key[0] < d.sys.Arch.DMAEnginesResetOnExit {
			n++
		}
	}
	return n
}

// reinit is the DMA side of a finished reset: the chip brings the
// engines of the reset cores back stopped and empty, and the driver
// forgets which of their queues the host rang. It takes the device lock.
func (s *dmaState) reinit(ncMap uint32) {
	d := s.d
	for c := range d.sys.Arch.CoresPerDevice {
		if ncMap != ncMapDevice && ncMap&(1<<c) == 0 {
			continue
		}
		core := d.chip.Core(c)
		core.ResetEngines()
		first, end := core.Engines()
		d.mu.Lock()
		for eng := first; eng < end; eng++ {
			for q := range dma.QueuesPerEngine {
				delete(s.hostDriven, [2]int{eng, q})
			}
		}
		d.mu.Unlock()
	}
}
