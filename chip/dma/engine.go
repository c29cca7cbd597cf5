package dma

import (
	"context"
	"sync/atomic"
	"syscall"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Queues per engine and ring limits, identical on every architecture.
const (
	QueuesPerEngine = 16
	MinRingDescs    = 32
	MaxRingDescs    = 16777200
	RingAlign       = 256 // ring start and end, in bytes
	ringSizeStep    = RingAlign / dmadesc.Size
)

// Memory is the physical address space an engine reads and writes.
type Memory interface {
	// Slice returns [pa, pa+n) as bytes the engine may read and write, or
	// false when no memory answers at those addresses.
	Slice(pa, n uint64) ([]byte, bool)
	// SliceWrite is Slice for bytes the engine will combine into (a
	// reduction): it may refuse memory the host cannot hold.
	SliceWrite(pa, n uint64) ([]byte, bool)
	// Write stores src at pa as an engine's write does: it may act
	// instead of storing (a semaphore window adds what it is written). It
	// reports false when the destination cannot be written, or the host
	// cannot hold it (the daemon's memory limit).
	Write(pa uint64, src []byte) bool
}

// QueueStatus is the driver's software status of a queue.
type QueueStatus uint32

const (
	QueueDisabled QueueStatus = 1
	QueueEnabled  QueueStatus = 2
	QueueAborted  QueueStatus = 3
)

// Bits of the emulated per-queue status register: why a queue stopped.
const (
	StatusReadError   = 1 << 0 // a descriptor, or the data it names, could not be read
	StatusWriteError  = 1 << 1 // the destination could not be written
	StatusRingIDError = 1 << 2 // a descriptor carried the wrong ring id
)

// Dir selects one side of a queue.
type Dir int

const (
	TX Dir = 0 // M2S: reads the source
	RX Dir = 1 // S2M: writes the destination
)

// RingSpec is what QUEUE_INIT programs into one side of a queue.
type RingSpec struct {
	Base uint64 // physical address of the first descriptor
	Size uint32 // descriptors
}

// ring is one side of a queue as the hardware tracks it.
type ring struct {
	RingSpec
	head    uint32       // next descriptor to execute
	pending uint32       // descriptors made available and not yet executed
	ringID  uint8        // ring id the descriptor at head must carry
	off     uint64       // bytes of the descriptor at head already moved
	cur     dmadesc.Desc // the descriptor at head, once fetched
	fetched bool
	done    uint64 // descriptors completed since the queue was reset
	acked   uint32 // the driver's software completion index (DMA_ACK_COMPLETED)
}

func (r *ring) tail() uint32 {
	if r.Size == 0 {
		return 0
	}
	return (r.head + r.pending) % r.Size
}

// complete retires the descriptor at head.
func (r *ring) complete() {
	r.off = 0
	r.fetched = false
	r.pending--
	r.done++
	r.head++
	if r.head == r.Size {
		r.head = 0
		r.ringID = (r.ringID + 1) & 3
	}
}

// Queue is one of an engine's sixteen queues.
type Queue struct {
	tx, rx   ring
	status   QueueStatus
	hwStatus uint32
	gen      uint64 // bumped at every reset, so a worker drops stale progress
	running  bool
	idle     chan struct{} // closed when the worker stops; nil while none runs
	// fed: the device moves this queue's tail (Arm, TailIncrement), so a
	// tail past what is staged waits at the first descriptor not yet
	// written instead of running it (starved) until it is (Restage).
	fed, starved bool
}

// Options are the architecture facts an engine needs.
type Options struct {
	// RingIDErrorsMasked lets a descriptor with the wrong ring id run.
	RingIDErrorsMasked bool
	// OnError is called (without locks held) when a queue stops on an error.
	OnError func(eng, qid int, status uint32)
	// Fault, if set, is consulted before each transfer: stall keeps the
	// queue from moving, a non-zero abort stops it with those status bits.
	Fault func() (stall bool, abort uint32)
	// OnTransfer, if set, is told the size of every completed transfer
	// (with the engine's lock held: it must only count).
	OnTransfer func(n uint64)
	// OnCopy, if set, hears of every step a queue completed (one TX/RX
	// descriptor pair's overlap, in queue order), after its bytes landed
	// and without the engine's lock: the chip watches its exec queues
	// through it.
	OnCopy func(eng, qid int, src, dst, n uint64)
	// Starved, if set, counts the queues waiting for a descriptor to be
	// staged across the engines sharing it: a chip's Restage then costs
	// one load, not one per engine, when none waits.
	Starved *atomic.Int32
}

// Engine is one UDMA engine.
type Engine struct {
	ID   int
	mem  Memory
	opts Options

	mu     lockrank.Mutex[lockrank.Engine]
	states [2]dmadesc.State // programmed state per direction
	q      [QueuesPerEngine]Queue
	// nstarved counts the queues waiting for a descriptor to be staged,
	// so Restage costs one load when none does (feed.go).
	nstarved atomic.Int32
	// polling is closed when the engine's staging poller returns; nil
	// while none runs (stagepoll.go).
	polling chan struct{}
}

// NewEngine returns an engine in the state reset leaves it: normal, every
// queue disabled and empty.
func NewEngine(id int, mem Memory, opts Options) *Engine {
	e := &Engine{ID: id, mem: mem, opts: opts, states: [2]dmadesc.State{dmadesc.StateNormal, dmadesc.StateNormal}}
	for i := range e.q {
		e.q[i].status = QueueDisabled
	}
	return e
}

// validateRings applies the hardware's ring checks in the driver's order:
// alignment and size granularity of both sides first (EPERM, the driver's
// -1), then each side's size bounds and end alignment (EINVAL). A side
// without a ring has base 0.
func validateRings(tx, rx RingSpec) syscall.Errno {
	for _, r := range []RingSpec{tx, rx} {
		if r.Base%RingAlign != 0 || r.Size%ringSizeStep != 0 {
			return syscall.EPERM
		}
	}
	return 0
}

func validateSide(r RingSpec) syscall.Errno {
	if r.Size < MinRingDescs || r.Size > MaxRingDescs {
		return syscall.EINVAL
	}
	if (r.Base+uint64(r.Size)*dmadesc.Size)%RingAlign != 0 {
		return syscall.EINVAL
	}
	return 0
}

// InitQueue programs and enables queue qid with the given rings, dropping
// whatever it had pending. As on the hardware the TX side is programmed
// before the RX side is validated, so an RX size error leaves TX set up.
func (e *Engine) InitQueue(qid int, tx, rx RingSpec) syscall.Errno {
	if qid < 0 || qid >= QueuesPerEngine {
		return syscall.EINVAL
	}
	if errno := validateRings(tx, rx); errno != 0 {
		return errno
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid]
	if errno := validateSide(tx); errno != 0 {
		return errno
	}
	e.feedLocked(q, false)
	q.gen++
	q.tx = ring{RingSpec: tx, ringID: dmadesc.InitialRingID}
	if errno := validateSide(rx); errno != 0 {
		return errno
	}
	q.rx = ring{RingSpec: rx, ringID: dmadesc.InitialRingID}
	q.status = QueueEnabled
	q.hwStatus = 0
	return 0
}

// Doorbell makes rx then tx more descriptors available (the tail-pointer
// increments of DMA_QUEUE_COPY_START) and starts the queue's worker.
func (e *Engine) Doorbell(qid int, txCount, rxCount uint32) syscall.Errno {
	if qid < 0 || qid >= QueuesPerEngine {
		return syscall.EPERM
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid]
	if txCount > q.tx.Size || rxCount > q.rx.Size {
		return syscall.EPERM
	}
	e.feedLocked(q, false) // the host rings it: a descriptor is run as it reads
	q.rx.pending = min(q.rx.pending+rxCount, q.rx.Size)
	q.tx.pending = min(q.tx.pending+txCount, q.tx.Size)
	e.runInlineLocked(qid)
	return 0
}

// SetState writes an engine state to both directions. Only disable,
// normal and abort are accepted; the driver's ioctl returns 0 regardless.
func (e *Engine) SetState(s dmadesc.State) bool {
	if s != dmadesc.StateDisable && s != dmadesc.StateNormal && s != dmadesc.StateAbort {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.states = [2]dmadesc.State{s, s}
	if s == dmadesc.StateNormal {
		for i := range e.q {
			e.kickLocked(i)
		}
	}
	return true
}

// EngineState is DMA_ENG_GET_STATE's answer.
type EngineState struct {
	RevisionID, MaxQueues, NumQueues uint32
	TX, RX                           dmadesc.State
}

// revisionID is the UDMA revision the emulated engines report.
const revisionID = 4

// State reports the engine's state as the hardware state registers decode:
// a disabled direction reads idle.
func (e *Engine) State() EngineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := EngineState{RevisionID: revisionID, MaxQueues: QueuesPerEngine, NumQueues: QueuesPerEngine}
	read := func(s dmadesc.State) dmadesc.State {
		if s == dmadesc.StateDisable {
			return dmadesc.StateIdle
		}
		return s
	}
	st.TX, st.RX = read(e.states[TX]), read(e.states[RX])
	return st
}

// QueueState is one side of DMA_QUEUE_GET_STATE's answer.
type QueueState struct {
	HWStatus, SWStatus uint32
	Base               uint64
	Length             uint32
	Head, Tail         uint32
	Completed          uint64 // descriptors retired since the last reset
}

// headMask is the width of the head and tail pointer registers.
const headMask = 1<<24 - 1

// QueueState reports one side of queue qid.
func (e *Engine) QueueState(qid int, d Dir) QueueState {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid%QueuesPerEngine]
	r := &q.tx
	if d == RX {
		r = &q.rx
	}
	return QueueState{
		HWStatus: q.hwStatus, SWStatus: uint32(q.status),
		Base: r.Base, Length: r.Size,
		Head: r.head & headMask, Tail: r.tail() & headMask,
		Completed: r.done,
	}
}

// Ring returns the ring programmed on one side of queue qid.
func (e *Engine) Ring(qid int, d Dir) RingSpec {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d == RX {
		return e.q[qid%QueuesPerEngine].rx.RingSpec
	}
	return e.q[qid%QueuesPerEngine].tx.RingSpec
}

// WaitIdle waits until queue qid has no worker running.
func (e *Engine) WaitIdle(ctx context.Context, qid int) error {
	for {
		e.mu.Lock()
		idle := e.q[qid%QueuesPerEngine].idle
		e.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Ack advances the software completion index of both sides of queue qid
// by count, as DMA_ACK_COMPLETED does; the driver's index arithmetic
// needs power-of-two rings (it asserts so), EINVAL here otherwise.
func (e *Engine) Ack(qid int, count uint32) syscall.Errno {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid%QueuesPerEngine]
	for _, r := range []*ring{&q.tx, &q.rx} {
		if r.Size == 0 || r.Size&(r.Size-1) != 0 {
			return syscall.EINVAL
		}
	}
	for _, r := range []*ring{&q.tx, &q.rx} {
		r.acked = (r.acked + count) & (r.Size - 1)
	}
	return 0
}

// DisableQueue stops queue qid and forgets its rings (the driver freeing
// an h2t queue's rings).
func (e *Engine) DisableQueue(qid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid%QueuesPerEngine]
	e.feedLocked(q, false)
	q.gen++
	q.tx, q.rx = ring{}, ring{}
	q.status = QueueDisabled
	q.hwStatus = 0
}

// Arm makes available the descriptors a device-driven queue finds written
// past its tail: consecutive non-empty descriptors carrying the ring id
// expected at their slot, on each side. It is what the chip does when a
// program rings a queue whose host never uses the doorbell (the exec
// queue); the ring id tells fresh descriptors from last lap's. It returns
// the counts armed and starts execution as a doorbell does.
func (e *Engine) Arm(qid int) (tx, rx uint32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid%QueuesPerEngine]
	if q.status != QueueEnabled {
		return 0, 0
	}
	e.feedLocked(q, true)
	tx, rx = e.scanLocked(&q.tx), e.scanLocked(&q.rx)
	q.tx.pending += tx
	q.rx.pending += rx
	if tx > 0 || rx > 0 {
		e.runInlineLocked(qid % QueuesPerEngine)
	}
	return tx, rx
}

// scanLocked counts the fresh descriptors after r's tail.
func (e *Engine) scanLocked(r *ring) uint32 {
	return e.walkStagedLocked(r, r.Size, nil)
}

// walkStagedLocked visits up to limit fresh descriptors after r's tail, in
// ring order, and returns how many there were.
func (e *Engine) walkStagedLocked(r *ring, limit uint32, visit func(dmadesc.Desc)) uint32 {
	if r.Size == 0 {
		return 0
	}
	idx, id := r.head+r.pending, r.ringID
	if idx >= r.Size {
		idx, id = idx-r.Size, (id+1)&3
	}
	n := uint32(0)
	for n < min(limit, r.Size-r.pending) {
		b, ok := e.mem.Slice(r.Base+uint64(idx)*dmadesc.Size, dmadesc.Size)
		if !ok {
			break
		}
		d := dmadesc.Decode(b)
		if !staged(d, id) {
			break
		}
		if visit != nil {
			visit(d)
		}
		n++
		if idx++; idx == r.Size {
			idx, id = 0, (id+1)&3
		}
	}
	return n
}

// Kick restarts the worker of every queue that has work.
func (e *Engine) Kick() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.q {
		e.kickLocked(i)
	}
}

// Idle reports whether queue qid has no worker running.
func (e *Engine) Idle(qid int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.q[qid%QueuesPerEngine].idle == nil
}

// TailIncrement makes n more descriptors available on side d of queue
// qid, as a write to that side's tail-increment register does, and hands
// the queue to its worker goroutine: unlike Doorbell it moves nothing in
// the caller's goroutine, so a program's CSR write never waits for a
// copy. It reports false for a queue out of range or an increment larger
// than the ring (the hardware's pointer would wrap past the head).
func (e *Engine) TailIncrement(qid int, d Dir, n uint32) bool {
	if qid < 0 || qid >= QueuesPerEngine {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid]
	r := &q.tx
	if d == RX {
		r = &q.rx
	}
	if n > r.Size {
		return false
	}
	e.feedLocked(q, true)
	r.pending = min(r.pending+n, r.Size)
	e.kickLocked(qid)
	return true
}
