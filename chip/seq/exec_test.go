package seq

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A run interpreted in steps: Resume stops at each wait that does not
// hold (a CTRL_ES record's events wait, then its own), goes on past it
// once it holds, and runs no more records than asked; Stop ends a run
// nobody runs.
func TestResumeInSteps(t *testing.T) {
	var w Words
	s := New(Config{Engine: DVE, Sync: &w})
	es := withEvents(NewRecord(OpCtrlES), Events{WaitMode: WaitEvtSetThenClear, WaitIdx: 1})
	es.SetESEvents(Events{WaitMode: WaitSemGE, WaitIdx: 2, WaitValue: 1, UpdateMode: UpdateSemInc, UpdateIdx: 3})
	x := s.Start(ImageProgram(Assemble(0x100, NewRecord(OpNop), es, halt())))
	ctx := context.Background()
	if st, n := x.Resume(ctx, 100); st != Blocked || n != 1 {
		t.Fatalf("first Resume: %v after %d records, want Blocked after 1", st, n)
	}
	if got := s.Status(); got.State != Waiting || got.PC != 0x140 || got.Wait.Idx != 1 {
		t.Fatalf("status %v, want waiting at 0x140 for event 1", got)
	}
	if x.Ready() {
		t.Fatal("ready before event 1 came")
	}
	w.SetEvent(1, true)
	if !x.Ready() || s.Status().State != Running || w.Event(1) {
		t.Fatalf("not ready once event 1 came, or it was not taken: %v", s.Status())
	}
	// The event was taken once: the record goes on to its own wait.
	if st, _ := x.Resume(ctx, 100); st != Blocked || s.Status().Wait.Idx != 2 {
		t.Fatalf("second Resume: %v, %v, want Blocked on semaphore 2", st, s.Status())
	}
	w.UpdateSemaphore(2, SemAdd, 1) // Resume re-checks by itself
	if st, n := x.Resume(ctx, 100); st != Ended || n != 2 || x.Result().State != Halted {
		t.Fatalf("third Resume: %v after %d, %+v", st, n, x.Result())
	}
	if w.Semaphore(3) != 1 || s.Counts().Records != 3 || s.Counts().Waits != 2 {
		t.Fatalf("semaphore 3 = %d, counts %+v", w.Semaphore(3), s.Counts())
	}

	// A share of records, then a stop while blocked.
	loop := Assemble(0x1000, NewRecord(OpNop), NewBranch(BranchAlways, 0, 0, -RecordSize))
	x = s.Start(ImageProgram(loop))
	if st, n := x.Resume(ctx, 10); st != Yielded || n != 10 {
		t.Fatalf("Resume(10) of a loop: %v after %d", st, n)
	}
	x = s.Start(ImageProgram(Assemble(0x2000, NewWait(WaitSemGE, 9, 1), halt())))
	if st, _ := x.Resume(ctx, 10); st != Blocked {
		t.Fatalf("Resume at a gate: %v", st)
	}
	if r := x.Stop(context.Canceled); r.State != Stopped || r.PC != 0x2000 || !errors.Is(r.Err, context.Canceled) || s.Status().State != Stopped {
		t.Fatalf("Stop: %+v, status %v", r, s.Status())
	}
	if st, _ := x.Resume(ctx, 10); st != Ended {
		t.Fatalf("Resume after Stop: %v", st)
	}
}

// ResumeUntil yields once its slice is over, looking at the clock after
// each compute record only: past the slice, a compute loop yields after
// one record and publishes its counts; a control loop runs its share.
func TestResumeUntilSlice(t *testing.T) {
	s := New(Config{Engine: DVE, OnChip: NewOnChipMemory(testSBUFActive)})
	ts := NewTensorScalar(TensorScalar{Src: Tensor3D{Step: [3]int16{1, 0, 0}, Num: [3]uint16{16, 1, 1}},
		Dst:     Tensor3D{Start: 64, Step: [3]int16{1, 0, 0}, Num: [3]uint16{16, 1, 1}},
		InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Op0: ALUMult, Op1: ALUAdd})
	x := s.Start(ImageProgram(Assemble(0x1000, ts, NewBranch(BranchAlways, 0, 0, -RecordSize))))
	past := time.Now().Add(-time.Second)
	ctx := context.Background()
	if st, n := x.ResumeUntil(ctx, 100, past); st != Yielded || n != 1 {
		t.Fatalf("compute loop past its slice: %v after %d records, want Yielded after 1", st, n)
	}
	if c := s.Counts(); c.Records != 1 || c.NotEmulated != 0 {
		t.Fatalf("counts after the slice: %+v, want 1 record published", c)
	}
	if st, n := x.ResumeUntil(ctx, 100, time.Now().Add(time.Hour)); st != Yielded || n != 100 {
		t.Fatalf("compute loop within its slice: %v after %d, want its share of 100", st, n)
	}
	x = s.Start(ImageProgram(Assemble(0x2000, NewRecord(OpNop), NewBranch(BranchAlways, 0, 0, -RecordSize))))
	if st, n := x.ResumeUntil(ctx, 100, past); st != Yielded || n != 100 {
		t.Fatalf("control loop past its slice: %v after %d, want its share of 100", st, n)
	}
}
