package chip

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// imageDriver holds one allocation, [imageBase, imageBase+imageSize) of
// HBM, where the tests' programs live.
type imageDriver struct{ testDriver }

const imageBase, imageSize = 1 << 20, 1 << 20

func (*imageDriver) Allocation(pa uint64) (base, size uint64, ok bool) {
	if pa >= imageBase && pa < imageBase+imageSize {
		return imageBase, imageSize, true
	}
	return 0, 0, false
}

// newImageChip is newTestChip whose HBM holds programs at imageBase.
func newImageChip(t *testing.T, instance string) *Chip {
	t.Helper()
	return newTestChipOn(t, instance, nil, &imageDriver{})
}

// loadImage writes recs at pa of c's memory and returns pa.
func loadImage(t *testing.T, c *Chip, pa uint64, recs ...*seq.Record) uint64 {
	t.Helper()
	img := seq.Assemble(pa, recs...)
	m, ok := c.mem.Slice(pa, uint64(len(img.Data)))
	if !ok {
		t.Fatalf("no memory at %#x", pa)
	}
	copy(m, img.Data)
	return pa
}

// setStart writes a start address into the local window at base.
func setStart(c *Chip, base, addr uint64) {
	c.BAR0().Write32(base+nxStartAddrLo, uint32(addr))
	c.BAR0().Write32(base+nxStartAddrHi, uint32(addr>>32))
}

// An engine starts by register on the program at its start address, runs
// on the core's semaphores, and its START_CTRL reads running until HALT
// stops it; a start while it runs is ignored; run-stall release (0)
// starts nothing.
func TestEngineStartByRegister(t *testing.T) {
	c := newImageChip(t, "trn1.2xlarge")
	const nc = 1
	bar := c.BAR0()
	win := c.arch.TPBBase(nc) + engineLocalWindow(c.arch.Arch, seq.ACT)
	prog := loadImage(t, c, imageBase,
		seq.NewSemUpdate(seq.UpdateSemInc, 5, 0), seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt))
	setStart(c, win, prog)
	if v := bar.Read32(win + nxStartAddrLo); v != uint32(prog) {
		t.Fatalf("START_ADDR_LO reads %#x, want %#x", v, uint32(prog))
	}
	bar.Write32(win+nxStartCtrl, 0) // run-stall release
	a, _ := c.Core(nc).Area()
	if a.Semaphore(5) != 0 || bar.Read32(win+nxStartCtrl)&nxStartBit != 0 {
		t.Fatalf("run-stall release started the engine: semaphore 5 = %d", a.Semaphore(5))
	}
	bar.Write32(win+nxStartCtrl, nxStartBit)
	if a.Semaphore(5) != 1 {
		t.Fatalf("semaphore 5 = %d after the start, want 1 (the program's increment)", a.Semaphore(5))
	}
	if bar.Read32(win+nxStartCtrl)&nxStartBit == 0 {
		t.Fatal("START_CTRL reads stopped while the engine waits")
	}
	bar.Write32(win+nxStartCtrl, nxStartBit) // running: ignored
	if a.Semaphore(5) != 1 {
		t.Fatalf("a start while running ran the program again: semaphore 5 = %d", a.Semaphore(5))
	}
	rep := c.Core(nc).EngineReports()
	if len(rep) != 1 || rep[0].Status.Engine != seq.ACT || rep[0].Status.State != seq.Waiting || rep[0].By != "START_CTRL" {
		t.Fatalf("engine reports %+v, want ACT waiting, started by START_CTRL", rep)
	}
	c.Core(nc).Apply(ReadWindow+uint64(Set)*WindowStride+4*7, Set, 1)
	waitUntil(t, "START_CTRL reading stopped after HALT", func() bool { return bar.Read32(win+nxStartCtrl)&nxStartBit == 0 })
	if st := c.Core(nc).EngineStatus(); st[0].State != seq.Halted {
		t.Errorf("engine status %v after HALT", st)
	}
	bar.Write32(win+nxStartCtrl, nxStartBit) // stopped: starts again
	if a.Semaphore(5) != 2 {
		t.Errorf("semaphore 5 = %d after a second start, want 2", a.Semaphore(5))
	}
}

// NC_RESET ends a register-started engine that waits, and StopRuns waits
// for it.
func TestEngineStartByRegisterReset(t *testing.T) {
	c := newImageChip(t, "trn2.3xlarge")
	const nc = 0
	win := c.arch.TPBBase(nc) + engineLocalWindow(c.arch.Arch, seq.POOL)
	setStart(c, win, loadImage(t, c, imageBase, seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt)))
	c.BAR0().Write32(win+nxStartCtrl, nxStartBit)
	c.Core(nc).ResetExec()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Core(nc).StopRuns(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.Core(nc).EngineStatus(); len(st) != 1 || st[0].State != seq.Stopped {
		t.Errorf("engine status %v after NC_RESET, want POOL stopped", st)
	}
	if v := c.BAR0().Read32(win + nxStartCtrl); v&nxStartBit != 0 {
		t.Errorf("START_CTRL %#x after NC_RESET", v)
	}
}

// A TOP_SP's tsync doorbell starts the program at its start address; its
// notification goes to the TOP_SP's NOTIFIC block with the block's
// picosecond clock.
func TestTopSPTsyncDoorbell(t *testing.T) {
	c := newImageChip(t, "trn1.2xlarge")
	const ts = 4 // core 1's second TOP_SP
	bar := c.BAR0()
	ring := c.arch.HBMBases[0] + 2<<20
	rec, _ := c.mem.Slice(ring, nq.RecordSize)
	slot := dhal.InferStatusSlot + int(seq.SP)
	c.ProgramNQ(true, ts, slot, ring, 4*nq.RecordSize)
	nqb := c.arch.TopSPNotificationBlock(ts)
	bar.Write32(nqb+dhal.NotificEnable, 1<<slot)
	local := c.arch.TopSPWindow(ts) + topSPLocal
	setStart(c, local, loadImage(t, c, imageBase, seq.NewNotify(1, 0x77), seq.NewRecord(seq.OpHalt)))
	before := uint64(bar.Read32(nqb+dhal.NotificTimestampHi))<<32 | uint64(bar.Read32(nqb+dhal.NotificTimestampLo))
	bar.Write32(local+topSPTsync, 1)
	waitUntil(t, "the TOP_SP program stopping", func() bool { return bar.Read32(local+nxStartCtrl)&nxStartBit == 0 })
	if ext := binary.LittleEndian.Uint16(rec[6:]); ext != 0x77 {
		t.Fatalf("TOP_SP record %x, want debug_hint_extended 0x77", rec)
	}
	if stamp := binary.LittleEndian.Uint64(rec[8:]); stamp < before {
		t.Errorf("record timestamp %d ps before the clock read before the doorbell (%d)", stamp, before)
	}
	if rep := c.Core(1).EngineReports(); len(rep) != 1 || rep[0].Status.State != seq.Halted || rep[0].By != "TOP_SP 4" {
		t.Errorf("core 1 engine reports %+v, want TOP_SP 4's program halted", rep)
	}
}
