package nq

import (
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/memtest"
)

// A NOTIFIC slot: records go only into an enabled, bound queue; the
// phase flips at each wrap; a consumer a whole ring behind sees the
// overflow bit; clearing the enable bit rewinds tail and phase.
func TestNotificSlot(t *testing.T) {
	const base = 0x400000100000
	mem := memtest.New(base, 4096)
	ring := mem.B[:64]
	b := NewBlock(mem, time.Now())
	const q = 6
	slot := uint64(regNotificSlotBase + q*notificSlotStride)
	b.Program(q, base, 64) // four records
	rec := InferRecord(0, dhal.RecordStart)
	if b.Emit(q, rec) {
		t.Fatal("a disabled queue took a record")
	}
	b.Write32(regNotificEnable, 1<<q)
	for i := range 4 {
		if !b.Emit(q, rec) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if tail, _ := b.Read32(slot + slotTail); tail != 0 {
		t.Errorf("tail %d after a full lap", tail)
	}
	if ring[3]>>7 != firstPhase || ring[48+3]>>7 != firstPhase {
		t.Errorf("first lap headers %#x %#x", ring[3], ring[51])
	}
	// Second lap: phase 0. The consumer says it read up to record 1, so
	// the record written at index 0 (next = 1 = head) overflows.
	b.Write32(slot+slotHead, 16)
	b.Emit(q, rec)
	if ring[3]>>7 == firstPhase || ring[3]&recordHWOverflowBit == 0 {
		t.Errorf("second-lap header %#x: want phase 0 and the overflow bit", ring[3])
	}
	b.Emit(q, rec)
	if ring[16+3]&recordHWOverflowBit != 0 {
		t.Error("overflow reported on a record the consumer had room for")
	}
	// Disabling rewinds.
	b.Write32(regNotificEnable, 0)
	if tail, _ := b.Read32(slot + slotTail); tail != 0 {
		t.Errorf("tail %d after disable", tail)
	}
	b.Write32(regNotificEnable, 1<<q)
	b.Emit(q, rec)
	if ring[3]>>7 != firstPhase {
		t.Errorf("after re-enable the phase is %d", ring[3]>>7)
	}
	// The timestamp increment register resets to 0x400 and the clock runs.
	if inc, _ := b.Read32(regNotificTSInc); inc != defaultTSInc {
		t.Errorf("timestamp_inc %#x", inc)
	}
	t1, _ := b.Read32(regNotificTSLo)
	t2, _ := b.Read32(regNotificTSLo)
	if t1 == t2 {
		t.Error("the picosecond clock does not move")
	}
}
