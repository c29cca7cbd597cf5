// Package nq is the chip side of notification queues: the NOTIFIC
// register blocks of the cores and TOP_SPs, and the writer of the 16-byte
// records the runtime polls in its rings (phase bit, overflow bit,
// timestamps), with the record formats the emulated chip emits.
package nq

import (
	"encoding/binary"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Memory is where the records go: the device's physical memory as its
// engines see it.
type Memory interface {
	Slice(pa, n uint64) ([]byte, bool)
}

// A NOTIFIC block: the register side of a core's (or a TOP_SP's)
// notification queues, and the chip's writer of notification records.
// Registers (offsets in the block): a free-running picosecond timestamp
// at 0x00/0x04, the queue enable bits at 0x14, the timestamp increment at
// 0xcc, and per queue slot q at 0x100 + q*0x28: base low/high, size
// (bytes), head (written by the consumer) and tail (where the chip writes
// next; read-only). Programming a slot's base or size, or clearing its
// enable bit, rewinds its tail and phase, as the runtime expects when it
// resets a queue.

// Register offsets come from dhal; slot registers here are relative to
// their slot.
const (
	BlockSize           = 0x1000
	notificSlots        = 16
	regNotificTSLo      = dhal.NotificTimestampLo
	regNotificTSHi      = dhal.NotificTimestampHi
	regNotificEnable    = dhal.NotificEnable
	regNotificTSInc     = dhal.NotificTimestampInc
	regNotificSlotBase  = dhal.NQSlotBaseLoOffset
	notificSlotStride   = dhal.NQSlotStride
	slotBaseLo          = 0
	slotBaseHi          = dhal.NQSlotBaseHiOffset - dhal.NQSlotBaseLoOffset
	slotSize            = dhal.NQSlotSizeOffset - dhal.NQSlotBaseLoOffset
	slotHead            = dhal.NQSlotHeadOffset - dhal.NQSlotBaseLoOffset
	slotTail            = dhal.NQSlotTailOffset - dhal.NQSlotBaseLoOffset
	defaultTSInc        = 0x400 // reset value; the runtime divides by it
	firstPhase          = 1     // the phase of a ring's first lap
	recordPhaseBit      = 0x80
	recordHWOverflowBit = 0x40
)

type nqSlot struct {
	base    uint64
	size    uint32
	tail    uint32
	head    uint32
	headSet bool // the consumer has written head: overflow can be told
	phase   uint8
	written uint64 // records written since the ring was bound or re-enabled (slots.go)
}

// Block is one NOTIFIC block; it implements mmio.Block.
type Block struct {
	mem   Memory
	epoch time.Time

	mu     lockrank.Mutex[lockrank.Notific]
	enable uint32
	tsInc  uint32
	slots  [notificSlots]nqSlot
}

// NewBlock returns a block in its reset state whose records go to mem and
// whose clock counts from epoch.
func NewBlock(mem Memory, epoch time.Time) *Block {
	b := &Block{mem: mem, epoch: epoch, tsInc: defaultTSInc}
	for i := range b.slots {
		b.slots[i].phase = firstPhase
	}
	return b
}

// now is the block's free-running clock in picoseconds.
func (b *Block) now() uint64 { return uint64(time.Since(b.epoch).Nanoseconds()) * 1000 }

func slotReg(off uint64) (q int, reg uint64, ok bool) {
	if off < regNotificSlotBase || off >= regNotificSlotBase+notificSlots*notificSlotStride {
		return 0, 0, false
	}
	rel := off - regNotificSlotBase
	return int(rel / notificSlotStride), rel % notificSlotStride, true
}

func (b *Block) Read32(off uint64) (uint32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch off {
	case regNotificTSLo:
		return uint32(b.now()), true
	case regNotificTSHi:
		return uint32(b.now() >> 32), true
	case regNotificEnable:
		return b.enable, true
	case regNotificTSInc:
		return b.tsInc, true
	}
	q, reg, ok := slotReg(off)
	if !ok {
		return 0, false
	}
	s := &b.slots[q]
	switch reg {
	case slotBaseLo:
		return uint32(s.base), true
	case slotBaseHi:
		return uint32(s.base >> 32), true
	case slotSize:
		return s.size, true
	case slotHead:
		return s.head, true
	case slotTail:
		return s.tail, true
	}
	return 0, false
}

func (b *Block) Write32(off uint64, v uint32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch off {
	case regNotificEnable:
		for q := range notificSlots {
			if b.enable&(1<<q) != 0 && v&(1<<q) == 0 {
				b.slots[q].rewind()
			}
		}
		b.enable = v
		return true
	case regNotificTSInc:
		b.tsInc = v
		return true
	case regNotificTSLo, regNotificTSHi:
		return true // the clock is not settable
	}
	q, reg, ok := slotReg(off)
	if !ok {
		return false
	}
	s := &b.slots[q]
	switch reg {
	case slotBaseLo:
		s.base = s.base&^0xffffffff | uint64(v)
		s.rewind()
	case slotBaseHi:
		s.base = s.base&0xffffffff | uint64(v)<<32
		s.rewind()
	case slotSize:
		s.size = v
		s.rewind()
	case slotHead:
		s.head, s.headSet = v, true
	case slotTail:
		// read-only
	default:
		return false
	}
	return true
}

func (s *nqSlot) rewind() {
	s.tail, s.phase, s.head, s.headSet, s.written = 0, firstPhase, 0, false, 0
}

// Program binds slot q to a ring, as the driver's NQ init does.
func (b *Block) Program(q int, base uint64, size uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q < 0 || q >= notificSlots {
		return
	}
	s := &b.slots[q]
	s.base, s.size = base, size
	s.rewind()
}

// Halt unbinds every slot (the driver halts a core's queues at reset).
func (b *Block) Halt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enable = 0
	for q := range b.slots {
		b.slots[q] = nqSlot{phase: firstPhase}
	}
}

// Emit writes a record into slot q's ring if the queue is bound and
// enabled (the hardware drops it otherwise). The record's header byte
// (byte 3) carries the type and phase and is stored last, with the rest
// of its word, after bytes 4-15, so a consumer polling the phase never
// sees a torn record. It reports whether the record was written.
func (b *Block) Emit(q int, rec Record) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &b.slots[q]
	if b.enable&(1<<q) == 0 || s.size < RecordSize || s.size%RecordSize != 0 {
		return false
	}
	mem, ok := b.mem.Slice(s.base+uint64(s.tail), RecordSize)
	if !ok {
		return false
	}
	next := (s.tail + RecordSize) % s.size
	header := rec[3]&^recordPhaseBit | s.phase<<7
	if s.headSet && next == s.head {
		header |= recordHWOverflowBit // the consumer fell a whole ring behind
	}
	binary.LittleEndian.PutUint64(rec[8:], b.now())
	rec[3] = header
	copy(mem[4:], rec[4:])
	// The first word, which holds the header, goes last and whole.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&mem[0])), binary.LittleEndian.Uint32(rec[:4]))
	s.tail = next
	s.written++
	if next == 0 {
		s.phase ^= 1
	}
	return true
}
