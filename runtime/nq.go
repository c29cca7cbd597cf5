package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Notification queues and the exec doorbell, as the runtime drives them.

// Notification types (nq_type) and record layout.
const (
	NQTypeTrace    = ioctl.NQTypeTrace
	NQTypeNotify   = ioctl.NQTypeNotify
	NQTypeEvent    = ioctl.NQTypeEvent
	NQTypeError    = ioctl.NQTypeError
	NQTypeTraceDMA = ioctl.NQTypeTraceDMA
	NQTypeThrottle = ioctl.NQTypeThrottle

	// INFER_STATUS records (see dhal).
	RecordSize      = dhal.RecordSize
	RecordStart     = dhal.RecordStart
	RecordEnd       = dhal.RecordEnd
	InferStatusSlot = dhal.InferStatusSlot
	ComputeEngines  = dhal.ComputeEngines
)

// NQ is a host-memory notification ring bound to a core's NOTIFIC slot,
// mapped into this process, read with the phase bit.
type NQ struct {
	dev   *Device
	Core  uint32
	Slot  uint32
	Size  uint32
	ring  []byte
	next  uint32 // index of the next record to read
	phase uint8  // phase of the current lap: 1 on the first
	block uint64 // BAR0 offset of the core's NOTIFIC block
}

// InitNQ allocates (or finds) core nc's ring for slot (the engine index)
// of type nqType in host memory and maps it (NOTIFICATIONS_INIT_V2).
func (d *Device) InitNQ(nc, nqType, slot, size uint32) (*NQ, error) {
	f, err := d.facts()
	if err != nil {
		return nil, err
	}
	v := ioctl.NotificationsInitV2{NQDevID: nc, NQType: nqType, EngineIndex: slot, Size: size, OnHostMemory: 1}
	if err := do(d.fd, "NOTIFICATIONS_INIT_V2", ioctl.CmdNotificationsInitV2, &v); err != nil {
		return nil, err
	}
	mapLen := (int(size) + 4095) &^ 4095 // the chunk, in pages
	ring, err := unix.Mmap(d.fd, int64(v.MmapOffset), mapLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap NQ ring at %#x: %w", v.MmapOffset, err)
	}
	return &NQ{dev: d, Core: nc, Slot: slot, Size: size, ring: ring[:size], phase: 1, block: f.NotificationBlock(int(nc))}, nil
}

// EnableNQs sets the enable bits of core nc's NOTIFIC slots in mask
// (the runtime enables its queues after init); a queue whose bit goes
// from 1 to 0 is rewound.
func (d *Device) EnableNQs(nc, mask uint32) error {
	f, err := d.facts()
	if err != nil {
		return err
	}
	return d.WriteRegister(f.NotificationBlock(int(nc))+dhal.NotificEnable, mask)
}

// Tail reads the queue's tail register (bytes).
func (q *NQ) Tail() (uint32, error) {
	v, err := q.dev.ReadRegisters(q.slotReg(dhal.NQSlotTailOffset))
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// Next waits for the next record, recognised by its phase bit, returns
// it, and tells the chip (head register) it was consumed.
func (q *NQ) Next(ctx context.Context) ([RecordSize]byte, error) {
	var rec [RecordSize]byte
	off := q.next * RecordSize
	word := (*uint32)(unsafe.Pointer(&q.ring[off]))
	arrived := func() bool { return uint8(atomic.LoadUint32(word)>>31) == q.phase }
	if err := pollUntil(ctx, arrived); err != nil {
		return rec, fmt.Errorf("NQ core %d slot %d: %w", q.Core, q.Slot, err)
	}
	copy(rec[:], q.ring[off:off+RecordSize])
	q.next++
	if q.next*RecordSize == q.Size {
		q.next, q.phase = 0, q.phase^1
	}
	err := q.dev.WriteRegister(q.slotReg(dhal.NQSlotHeadOffset), q.next*RecordSize)
	return rec, err
}

// slotReg is the BAR0 offset of one of the queue's slot registers, given
// as its offset for slot 0 inside a NOTIFIC block.
func (q *NQ) slotReg(reg uint64) uint64 {
	return dhal.NQSlot(q.block, int(q.Slot)) + reg - dhal.NQSlotBaseLoOffset
}

// Close unmaps the ring (the ring itself lives until the core is reset).
func (q *NQ) Close() error { return unix.Munmap(q.ring[:cap(q.ring)]) }

// RecordCode returns an INFER_STATUS record's code (bytes 6-7).
func RecordCode(rec [RecordSize]byte) uint16 { return binary.LittleEndian.Uint16(rec[6:]) }

// RecordTimestamp returns a record's timestamp (picoseconds).
func RecordTimestamp(rec [RecordSize]byte) uint64 { return binary.LittleEndian.Uint64(rec[8:]) }

// Doorbell increments core nc's semaphore sem by value
// (SEMAPHORE_INCREMENT): with the inference-start semaphore, value 1
// runs what was staged and 2 halts the core's idle program.
func (d *Device) Doorbell(nc, sem, value uint32) error {
	v := ioctl.Semaphore{NCID: nc, SemaphoreIndex: sem, Value: value}
	return do(d.fd, "SEMAPHORE_INCREMENT", ioctl.CmdSemaphoreIncrement, &v)
}

// Ring is the mapped ring, for consumers that poll it directly.
func (q *NQ) Ring() []byte { return q.ring }
