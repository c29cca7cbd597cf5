package nq

import (
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/memtest"
)

// Slots lists the bound queues with their registers and the records
// written, across a wrap; a dropped record is not counted.
func TestSlotsCountRecords(t *testing.T) {
	const base = 0x400000100000
	b := NewBlock(memtest.New(base, 4096), time.Now())
	if got := b.Slots(); len(got) != 0 {
		t.Fatalf("fresh block: %+v", got)
	}
	const q = 3
	b.Program(q, base, 64)
	rec := InferRecord(0, dhal.RecordStart)
	b.Emit(q, rec) // dropped: not enabled
	b.Write32(regNotificEnable, 1<<q)
	for range 5 {
		b.Emit(q, rec)
	}
	got := b.Slots()
	want := SlotState{Slot: q, Size: 64, Tail: 16, Enabled: true, Records: 5}
	if len(got) != 1 || got[0] != want {
		t.Errorf("slots %+v, want [%+v]", got, want)
	}
	b.Program(q, base, 64)
	if got := b.Slots(); len(got) != 1 || got[0].Records != 0 || got[0].Tail != 0 {
		t.Errorf("after rebinding: %+v", got)
	}
}
