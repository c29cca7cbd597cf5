package dma

import "github.com/neuronfs/neuronfs/chip/dma/dmadesc"

// The engine's register block as BAR0 shows it (offsets relative to the
// block; the layout is the same on every architecture). Reads report the
// live queue state; a write to the change-state register moves the
// engine. Everything else is left to the register file as plain storage.

const (
	regM2SQueues   = 0x1000
	regS2MQueues   = 0x21000
	regQueueStride = 0x1000
	regS2MOffset   = 0x20000 // S2M engine registers mirror M2S at this distance

	regQueueCfg     = 0x20
	regQueueStatus  = 0x24
	regQueueRingLo  = 0x28
	regQueueRingHi  = 0x2c
	regQueueLength  = 0x30
	regQueueHead    = 0x34
	regQueueTailInc = 0x38
	regQueueTail    = 0x3c
	regQueueCurrent = 0x40

	regChangeState = 0x204

	cfgPrefetchScheduling = 3 << 16
	changeNormal          = 1
	changeDisable         = 2
	changeAbort           = 4
)

// queueReg splits a block offset into queue, side and register.
func queueReg(off uint64) (qid int, d Dir, reg uint64, ok bool) {
	for _, side := range []struct {
		base uint64
		d    Dir
	}{{regM2SQueues, TX}, {regS2MQueues, RX}} {
		if off >= side.base && off < side.base+QueuesPerEngine*regQueueStride {
			rel := off - side.base
			return int(rel / regQueueStride), side.d, rel % regQueueStride, true
		}
	}
	return 0, 0, 0, false
}

// ReadRegister reads a queue register of the engine's block.
func (e *Engine) ReadRegister(off uint64) (uint32, bool) {
	qid, d, reg, ok := queueReg(off)
	if !ok {
		return 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid]
	r := &q.tx
	if d == RX {
		r = &q.rx
	}
	switch reg {
	case regQueueCfg:
		if q.status == QueueEnabled {
			return cfgPrefetchScheduling, true
		}
		return 0, true
	case regQueueStatus:
		return q.hwStatus, true
	case regQueueRingLo:
		return uint32(r.Base) &^ 0x3f, true
	case regQueueRingHi:
		return uint32(r.Base >> 32), true
	case regQueueLength:
		return r.Size & headMask, true
	case regQueueHead, regQueueCurrent:
		return r.head&headMask | uint32(r.ringID)<<30, true
	case regQueueTail:
		return r.tail() & headMask, true
	case regQueueTailInc:
		return 0, true // write-only
	}
	return 0, false
}

// WriteRegister handles the writes with an effect: the change-state
// register of either direction (both move together, as the driver always
// writes both).
func (e *Engine) WriteRegister(off uint64, v uint32) bool {
	if off != regChangeState && off != regChangeState+regS2MOffset {
		return false
	}
	switch {
	case v&changeAbort != 0:
		e.SetState(dmadesc.StateAbort)
	case v&changeDisable != 0:
		e.SetState(dmadesc.StateDisable)
	case v&changeNormal != 0:
		e.SetState(dmadesc.StateNormal)
	}
	return true
}
