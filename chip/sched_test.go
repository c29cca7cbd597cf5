package chip

import (
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
)

// incWindow is the offset of semaphore idx in a core's increment window.
func incWindow(idx int) uint64 { return ReadWindow + uint64(Inc)*WindowStride + 4*uint64(idx) }

// A doorbell runs the engines its increment releases before it returns,
// and those they release in turn: PE's gate opens, PE releases ACT, and
// ACT's increment is there when the ringer gets back, with no goroutine
// to wait for.
func TestDoorbellRunsEnginesInline(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc = 1
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE:  seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, 0, 1), seq.NewSemUpdate(seq.UpdateSemInc, 9, 0), seq.NewRecord(seq.OpHalt)),
		seq.ACT: seq.Assemble(0x2000, seq.NewWait(seq.WaitSemGE, 9, 1), seq.NewSemUpdate(seq.UpdateSemInc, 10, 0), seq.NewRecord(seq.OpHalt)),
	})
	for _, e := range []seq.Engine{seq.PE, seq.ACT} {
		if st := r.seqs[e].Status(); st.State != seq.Waiting {
			t.Fatalf("%v before the doorbell: %v", e, st)
		}
	}
	if n := c.cores[nc].runs.nparked.Load(); n != 2 {
		t.Fatalf("%d engines parked at their gates, want 2", n)
	}
	c.Core(nc).Apply(incWindow(0), Inc, DoorbellRun)
	a, _ := c.Core(nc).Area()
	if v := a.Semaphore(10); v != 1 {
		t.Fatalf("semaphore 10 = %d when the doorbell returned: the engines ran elsewhere", v)
	}
	for _, e := range []seq.Engine{seq.PE, seq.ACT} {
		if st := r.seqs[e].Status(); st.State != seq.Halted {
			t.Errorf("%v after the doorbell: %v", e, st)
		}
	}
}

// A doorbell that opens an endless loop returns after its budget; the
// loop goes on in the engine's own goroutine until a reset ends it.
func TestDoorbellInlineBudget(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc = 0
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.POOL: seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, 0, 1), seq.NewALUImm(seq.ALUAdd, 1, 1, 1), seq.NewBranch(seq.BranchAlways, 0, 0, -seq.RecordSize)),
	})
	returned := make(chan struct{})
	go func() {
		c.Core(nc).Apply(incWindow(0), Inc, DoorbellRun)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the doorbell runs an endless loop and never returns")
	}
	waitUntil(t, "the loop going on after the doorbell", func() bool {
		return r.seqs[seq.POOL].Counts().Records > 4*inlineBudget
	})
	if st := r.seqs[seq.POOL].Status(); st.State != seq.Running {
		t.Fatalf("POOL %v, want running", st)
	}
	c.Core(nc).ResetExec()
	waitUntil(t, "the reset ending the loop", func() bool { return r.seqs[seq.POOL].Status().State == seq.Stopped })
}

// A store that is not a doorbell hands the engines it releases to
// goroutines of their own, and a reset ends parked engines, which no
// goroutine keeps.
func TestParkedEngines(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc = 0
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE:  seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt)),
		seq.DVE: seq.Assemble(0x2000, seq.NewWait(seq.WaitSemGE, 8, 1), seq.NewRecord(seq.OpHalt)),
	})
	c.Core(nc).Apply(ReadWindow+uint64(Set)*WindowStride+4*7, Set, 1)
	waitUntil(t, "PE released by the host's write", func() bool { return r.seqs[seq.PE].Status().State == seq.Halted })
	if n := c.cores[nc].runs.nparked.Load(); n != 1 {
		t.Fatalf("%d engines parked, want DVE alone", n)
	}
	c.Core(nc).ResetExec()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the reset left a parked engine running")
	}
	if st := r.seqs[seq.DVE].Status(); st.State != seq.Stopped || st.PC != 0x2000 {
		t.Fatalf("DVE after the reset: %v", st)
	}
	if n := c.cores[nc].runs.nparked.Load(); n != 0 {
		t.Fatalf("%d engines still parked after the reset", n)
	}
}

// A parked engine's wait that takes its event (set, then clear it) is
// checked under the core's lock: the change it makes wakes the core only
// once the lock is released.
func TestParkedWaitTakesEvent(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc = 0
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE:  seq.Assemble(0x1000, seq.NewWait(seq.WaitEvtSetThenClear, 5, 0), seq.NewRecord(seq.OpHalt)),
		seq.ACT: seq.Assemble(0x2000, seq.NewWait(seq.WaitSemGE, 8, 1), seq.NewRecord(seq.OpHalt)),
	})
	a, _ := c.Core(nc).Area()
	done := make(chan struct{})
	go func() {
		a.SetEvent(5, 1) // the host's EVENT_SET
		c.Core(nc).Wake()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("waking the core deadlocked on the event its engine took")
	}
	waitUntil(t, "PE past its wait", func() bool { return r.seqs[seq.PE].Status().State == seq.Halted })
	if a.Event(5) != 0 {
		t.Error("PE's wait did not take the event")
	}
}
