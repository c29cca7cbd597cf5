package seq

import (
	"context"
	"testing"
)

// The semaphores of the staged-program test.
const (
	semStart   = 0 // the doorbell: the host adds 1 per execution
	semArrive  = 1 // engines other than SP arrived at the postamble
	semRelease = 2 // SP let them go
	semPassed  = 3 // they passed the release
	semMatmul  = 4 // PE's result is ready for ACT
)

// staged builds one engine's image in the shape the runtime stages
// (exec-protocol.md §2.1): PREAMBLE (the wait gate, START), MAIN,
// POSTAMBLE (barrier, semaphore reset, END notify) and a branch back to
// the gate. SP runs the barrier and resets every semaphore.
func staged(e Engine, base uint64) *Image {
	recs := []*Record{
		NewWait(WaitSemGE, semStart, 1), // the gate
		NewNotify(0, 2),                 // START
	}
	switch e { // MAIN
	case PE:
		recs = append(recs, withEvents(NewRecord(OpMatmulSparse), Events{UpdateMode: UpdateSemInc + UpdateCompleted, UpdateIdx: semMatmul}))
	case ACT:
		recs = append(recs, withEvents(NewRecord(OpActivate2), Events{WaitMode: WaitSemGE, WaitIdx: semMatmul, WaitValue: 1}))
	}
	if e == SP {
		recs = append(recs,
			NewWait(WaitSemGE, semArrive, NumEngines-1),
			semSet(semArrive, 0), semSet(semStart, 0), semSet(semMatmul, 0),
			semSet(semRelease, 1),
			NewWait(WaitSemGE, semPassed, NumEngines-1),
			semSet(semPassed, 0), semSet(semRelease, 0))
	} else {
		recs = append(recs, semInc(semArrive), NewWait(WaitSemGE, semRelease, 1), semInc(semPassed))
	}
	recs = append(recs, NewNotify(0, 3)) // END
	back := NewBranch(BranchAlways, 0, 0, -int32(len(recs))*RecordSize)
	return Assemble(base, append(recs, back)...)
}

// Every engine runs the staged program once per doorbell: START then END,
// in order, and waits at its gate in between; a reset ends the waits.
func TestStagedProgram(t *testing.T) {
	const runs = 3
	c := newCore(t)
	imgs := map[Engine]*Image{}
	for e := range Engine(NumEngines) {
		imgs[e] = staged(e, 0x100000*uint64(e+1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.start(ctx, imgs)
	for run := range runs {
		for e := range Engine(NumEngines) {
			c.waitState(e, Waiting)
		}
		c.words.UpdateSemaphore(semStart, SemAdd, 1) // the doorbell
		var phase [NumEngines]uint16
		for range 2 * NumEngines {
			n := c.note()
			if n.Kind != NotifyExplicit || n.HintExt != phase[n.Engine]+2 || (phase[n.Engine] == 0) != (n.HintExt == 2) {
				t.Fatalf("run %d: %+v after %d", run, n, phase[n.Engine])
			}
			phase[n.Engine]++
		}
	}
	for e := range Engine(NumEngines) {
		st := c.waitState(e, Waiting)
		if st.PC != imgs[e].Base || st.Wait.Idx != semStart || st.Wait.Now != 0 {
			t.Fatalf("%v: %v", e, st)
		}
	}
	for i := range uint8(5) {
		if v := c.words.Semaphore(i); v != 0 {
			t.Fatalf("semaphore %d left at %d", i, v)
		}
	}
	cancel()
	for e, r := range c.results(ch, NumEngines) {
		if r.State != Stopped || r.PC != imgs[e].Base {
			t.Fatalf("%v: %+v", e, r)
		}
	}
	if pe, act := c.seqs[PE].Counts(), c.seqs[ACT].Counts(); pe.NotEmulated != runs || act.ByOpcode[OpActivate2] != runs || pe.Waits < 1 {
		t.Fatalf("PE %d not emulated, ACT %d activations", pe.NotEmulated, act.ByOpcode[OpActivate2])
	}
}
