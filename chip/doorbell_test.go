package chip

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/dhal"
)

// A chip stands alone: an increment of a core's semaphore rings its
// doorbell, the core runs (nothing staged) and its engines report START
// then END into the INFER_STATUS ring programmed for them, and the run
// is counted through the driver.
func TestDoorbellWritesInferRecords(t *testing.T) {
	c, drv := newTestChipDriver(t, "trn2.3xlarge")
	const nc, records = 1, 4
	base := c.arch.HBMBases[0] + 1<<20
	ring, ok := c.mem.Slice(base, records*nq.RecordSize)
	if !ok {
		t.Fatal("no memory for the ring")
	}
	c.ProgramNQ(false, nc, dhal.InferStatusSlot, base, records*nq.RecordSize)
	// The runtime enables the queue through BAR0, as on the hardware.
	c.BAR0().Write32(c.arch.NotificationBlock(nc)+dhal.NotificEnable, 1<<dhal.InferStatusSlot)
	c.Core(nc).Apply(ReadWindow+uint64(Inc)*WindowStride+4*3, Inc, DoorbellRun)

	code := func(i int) uint16 { return binary.LittleEndian.Uint16(ring[i*nq.RecordSize+6:]) }
	deadline := time.Now().Add(10 * time.Second)
	for code(1) != dhal.RecordEnd && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if code(0) != dhal.RecordStart || code(1) != dhal.RecordEnd {
		t.Fatalf("records %d, %d; want START %d, END %d", code(0), code(1), dhal.RecordStart, dhal.RecordEnd)
	}
	if typ := ring[3] &^ 0xc0; typ != dhal.EngineNotifyType[0] { // without the phase and overflow bits
		t.Errorf("record type %#x, want PE's %#x", typ, dhal.EngineNotifyType[0])
	}
	if n := drv.inferences.Load(); n != 1 {
		t.Errorf("%d executions counted, want 1", n)
	}
	if a, _ := c.Core(nc).Area(); a.Semaphore(3) != DoorbellRun {
		t.Errorf("semaphore 3 is %d after the increment, want %d", a.Semaphore(3), DoorbellRun)
	}
}
