package chip

import (
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// A run that cannot finish, its POOL waiting after kicking a Q7 core and
// its PE waiting on POOL, is ended after the hang budget: each waiting
// engine writes a sequencer error record at its wait record into the
// core's ERROR queue (what the runtime's harvest drains), the run stops,
// and the core names the waits. A run waiting on what the host may still
// answer is left alone. On V2, V3 and V4.
func TestRunWaitingOnActorEnds(t *testing.T) {
	const budget = 20 * time.Millisecond
	for _, inst := range []string{"trn1.2xlarge", "trn2.3xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			c, _ := newTestChipWith(t, inst, func(cfg *Config) { cfg.HangEnd = budget })
			const nc, evt, sem, records = 1, 5, 7, 4
			ring := errorRing(t, c, nc, records)
			q7 := c.arch.CSRBase() + c.arch.TPBBase(nc) + c.arch.Q7Pool().DRAMOffset(2)
			const pool, pe = 0x1000, 0x2000
			r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
				seq.POOL: seq.Assemble(pool, seq.NewCSRWrite(q7, 1), seq.NewWait(seq.WaitEvtSet, evt, 0), seq.NewRecord(seq.OpHalt)),
				seq.PE:   seq.Assemble(pe, seq.NewWait(seq.WaitSemGE, sem, 1), seq.NewRecord(seq.OpHalt)),
			})
			select {
			case <-r.done:
			case <-time.After(20 * time.Second):
				t.Fatal("the run blocked on a Q7 core was never ended")
			}
			want := map[byte]uint64{byte(seq.POOL): pool + seq.RecordSize, byte(seq.PE): pe}
			for i := range 2 {
				rec := ring[i*nq.RecordSize : (i+1)*nq.RecordSize]
				if typ := rec[3] &^ 0xc0; typ != 0x1f || rec[4] != seq.ErrorIDSequencerFatal {
					t.Fatalf("error record %d: type %#x id %#x, want TPB_ERROR 0x1f, SEQUENCER_FATAL %#x", i, typ, rec[4], seq.ErrorIDSequencerFatal)
				}
				pc, ok := want[rec[5]]
				line := uint64(rec[0]) | uint64(rec[1])<<8 | uint64(rec[2]&0x0f)<<16
				if !ok || line != pc/64 {
					t.Errorf("error record %d: engine %d at line %#x, want one of %v (by line)", i, rec[5], line, want)
				}
				delete(want, rec[5])
			}
			if ended := c.Core(nc).EndedHang(); !strings.Contains(ended, "awaits Q7 core 2 of NeuronCore 1") || !strings.Contains(ended, "PE waits at") {
				t.Errorf("the core names the ended waits %q", ended)
			}
			for _, s := range r.seqs {
				if s != nil && s.Status().State != seq.Stopped {
					t.Errorf("%v after the end, want stopped", s.Status())
				}
			}
			if n := c.Core(nc).hangWatchers.Load(); n != 1 {
				t.Errorf("%d hang watchers started, want 1 (at POOL's kick of the Q7 core)", n)
			}
		})
	}
}

// A run that never writes into a known actor starts no hang watcher (no
// goroutine, no ticker), however long it waits; one that kicks an actor
// several times starts one. The first is the exec benchmarks' case.
func TestRunWithoutActorStartsNoWatcher(t *testing.T) {
	const budget = 10 * time.Millisecond
	c, _ := newTestChipWith(t, "trn2.3xlarge", func(cfg *Config) { cfg.HangEnd = budget })
	const nc, sem = 0, 7
	core := c.Core(nc)
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE: seq.Assemble(0x2000, seq.NewCSRWrite(c.arch.CSRBase()+0x100, 1), seq.NewWait(seq.WaitSemGE, sem, 1), seq.NewRecord(seq.OpHalt)),
	})
	waitUntil(t, "PE waits", func() bool { return r.seqs[seq.PE].Status().State == seq.Waiting })
	time.Sleep(5 * budget) // a watcher started at the run's start would have looked by now
	if n := core.hangWatchers.Load(); n != 0 || r.watched.Load() {
		t.Fatalf("%d hang watchers started (run watched %v) for a run that kicked no actor", n, r.watched.Load())
	}
	core.UpdateSemaphore(sem, seq.SemSet, 1)
	waitUntil(t, "PE halts", func() bool { return r.seqs[seq.PE].Status().State == seq.Halted })

	q7 := c.arch.CSRBase() + c.arch.TPBBase(nc) + c.arch.Q7Pool().DRAMOffset(1)
	kick := seq.NewCSRWrite(q7, 1)
	r = runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.POOL: seq.Assemble(0x1000, kick, kick, kick, seq.NewRecord(seq.OpHalt)),
	})
	waitUntil(t, "POOL halts", func() bool { return r.seqs[seq.POOL].Status().State == seq.Halted })
	if n := core.hangWatchers.Load(); n != 1 || !r.watched.Load() {
		t.Fatalf("%d hang watchers started after a run kicked a Q7 core three times, want 1", n)
	}
}

// A register-started run (not the core's current run) that waits after
// kicking a Q7 core is ended as a delivered request's run is: its error
// record lands in the core's ERROR queue and its START_CTRL reads stopped.
func TestRegisterRunWaitingOnActorEnds(t *testing.T) {
	c := newTestChipOn(t, "trn2.3xlarge", func(cfg *Config) { cfg.HangEnd = 20 * time.Millisecond }, &imageDriver{})
	const nc, evt = 0, 5
	ring := errorRing(t, c, nc, 4)
	win := c.arch.TPBBase(nc) + engineLocalWindow(c.arch.Arch, seq.POOL)
	q7 := c.arch.CSRBase() + c.arch.TPBBase(nc) + c.arch.Q7Pool().DRAMOffset(0)
	prog := loadImage(t, c, imageBase, seq.NewCSRWrite(q7, 1), seq.NewWait(seq.WaitEvtSet, evt, 0), seq.NewRecord(seq.OpHalt))
	setStart(c, win, prog)
	c.BAR0().Write32(win+nxStartCtrl, nxStartBit)
	waitUntil(t, "the register-started run ended", func() bool { return c.BAR0().Read32(win+nxStartCtrl)&nxStartBit == 0 })
	if typ := ring[3] &^ 0xc0; typ != 0x1f || ring[4] != seq.ErrorIDSequencerFatal || ring[5] != byte(seq.POOL) {
		t.Fatalf("error record: type %#x id %#x engine %d, want TPB_ERROR 0x1f, SEQUENCER_FATAL, POOL", typ, ring[4], ring[5])
	}
	if line := uint64(ring[0]) | uint64(ring[1])<<8 | uint64(ring[2]&0x0f)<<16; line != (prog+seq.RecordSize)/64 {
		t.Errorf("error record at line %#x, want the wait's %#x", line, (prog+seq.RecordSize)/64)
	}
	if n := c.Core(nc).hangWatchers.Load(); n != 1 {
		t.Errorf("%d hang watchers started, want 1", n)
	}
}

// A run blocked on a semaphore the host may still raise is not ended,
// however long it waits, even after a write to a register that is no
// known actor (its wait is named, not ended).
func TestRunWaitingOnHostStays(t *testing.T) {
	const budget = 10 * time.Millisecond
	c, _ := newTestChipWith(t, "trn2.3xlarge", func(cfg *Config) { cfg.HangEnd = budget })
	const nc, sem = 0, 7
	ring := errorRing(t, c, nc, 4)
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE: seq.Assemble(0x2000, seq.NewCSRWrite(c.arch.CSRBase()+0x100, 1), seq.NewWait(seq.WaitSemGE, sem, 1), seq.NewRecord(seq.OpHalt)),
	})
	waitUntil(t, "PE waits", func() bool { return r.seqs[seq.PE].Status().State == seq.Waiting })
	if a := c.Core(nc).awaits(seq.PE); a == "" {
		t.Fatal("PE's write to a plain register is not noted: the test proves nothing")
	}
	time.Sleep(30 * budget)
	if st := r.seqs[seq.PE].Status(); st.State != seq.Waiting || ring[3] != 0 {
		t.Fatalf("%v, error record header %#x: a wait the host may answer was ended", st, ring[3])
	}
	c.Core(nc).UpdateSemaphore(sem, seq.SemSet, 1)
	waitUntil(t, "PE halts", func() bool { return r.seqs[seq.PE].Status().State == seq.Halted })
}

// errorRing binds and enables core nc's ERROR queue on a ring of records
// in device memory, and returns the ring.
func errorRing(t *testing.T, c *Chip, nc, records int) []byte {
	t.Helper()
	base := c.arch.HBMBases[0] + 1<<20
	ring, ok := c.mem.Slice(base, uint64(records*nq.RecordSize))
	if !ok {
		t.Fatal("no memory for the ring")
	}
	c.ProgramNQ(false, nc, nq.ErrorSlot, base, uint32(records*nq.RecordSize))
	c.BAR0().Write32(c.arch.NotificationBlock(nc)+dhal.NotificEnable, 1<<nq.ErrorSlot)
	return ring
}
