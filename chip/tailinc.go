package chip

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/dhal"
)

// Tail increments from the device. A DMA queue's tail-increment register
// (DRTP_inc, +0x38 of the queue's block) is written by the device itself
// on the runtime's submit path: by the exec ring's trigger descriptors (a
// 4-byte copy whose destination is the register) and by a program's
// CTRL_WR. Each write makes that many more descriptors available, one
// increment at a time; a tail moved past what is staged waits for it
// (dma/feed.go). A queue the device's increments feed is never armed by
// a doorbell again (execqueue.go): its increments start it, and arming
// it as well would move its tail past what they release.

// queueRoles records, per DMA engine, the queues the device's increments
// feed: bit qid of word eng. Lock-free: a bit is set by the increment's
// writer and read by a doorbell.
type queueRoles struct{ fed []atomic.Uint32 }

func newQueueRoles(engines int) *queueRoles { return &queueRoles{fed: make([]atomic.Uint32, engines)} }

func (r *queueRoles) markFed(eng, qid int) {
	if eng >= 0 && eng < len(r.fed) {
		r.fed[eng].Or(1 << qid)
	}
}

func (r *queueRoles) isFed(eng, qid int) bool {
	return eng >= 0 && eng < len(r.fed) && r.fed[eng].Load()&(1<<qid) != 0
}

// forget clears the roles of engines [first, end) (a core reset).
func (r *queueRoles) forget(first, end int) {
	for eng := max(first, 0); eng < min(end, len(r.fed)); eng++ {
		r.fed[eng].Store(0)
	}
}

// tailIncrement makes n more descriptors available on side d of engine
// eng's queue qid, as a write to its tail-increment register does, and
// notes the queue as fed by increments.
func (c *Chip) tailIncrement(eng, qid int, d dma.Dir, n uint32) error {
	e := c.Engine(eng)
	if e == nil {
		return nil // an engine this chip does not model: the write is taken
	}
	c.roles.markFed(eng, qid)
	if !e.TailIncrement(qid, d, n) {
		return fmt.Errorf("DMA engine %d queue %d: tail increment %d exceeds the ring", eng, qid, n)
	}
	return nil
}

// udmaEffects are the engines' UDMA register blocks as DMA destinations,
// at their device (SoC) addresses: a copy into a queue's tail-increment
// register is an increment (a trigger descriptor); a copy into any other
// register of the block is taken and ignored.
func (c *Chip) udmaEffects() []dma.Effect {
	f := c.arch
	var out []dma.Effect
	for eng := range f.DMAEnginesPerDevice {
		base := f.UDMABase(eng)
		if base == dhal.InvalidOffset {
			continue
		}
		out = append(out, dma.Effect{Range: dma.Range{Base: f.CSRBase() + base, Size: dhal.UDMABlockSize},
			Apply: func(off uint64, b []byte) { c.udmaWrite(base+off, b) }})
	}
	return out
}

// udmaWrite performs the 32-bit stores b makes at BAR0 offset off of a
// UDMA block; trailing bytes short of a word are dropped.
func (c *Chip) udmaWrite(off uint64, b []byte) {
	for ; len(b) >= 4; off, b = off+4, b[4:] {
		eng, qid, s2m, reg, ok := c.arch.UDMAQueueRegister(off)
		if !ok || reg != dhal.UDMAQueueTailInc {
			continue
		}
		d := dma.TX
		if s2m {
			d = dma.RX
		}
		if err := c.tailIncrement(eng, qid, d, binary.LittleEndian.Uint32(b)); err != nil {
			c.log.WithFields(logrus.Fields{"engine": eng, "queue": qid}).Warn(err)
		}
	}
}

// Restage resumes the device-fed queues waiting for descriptors the host
// has now written (after a copy into device memory): one load when none
// waits.
func (c *Chip) Restage() {
	if c.starved.Load() == 0 {
		return // no queue waits (one load, on every semaphore write)
	}
	for _, e := range c.engines {
		e.Restage()
	}
}
