package seq

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A record waiting on a semaphore runs only after another engine's update
// of it: PE's notification comes before ACT's.
func TestOrderingAcrossEngines(t *testing.T) {
	c := newCore(t)
	pe := Assemble(0x1000, NewNotify(0, 10), semInc(7), halt())
	act := Assemble(0x9000, NewWait(WaitSemGE, 7, 1), NewNotify(0, 11), halt())
	ch := c.start(context.Background(), map[Engine]*Image{ACT: act, PE: pe})
	got := c.results(ch, 2)
	for e, r := range got {
		if r.State != Halted {
			t.Fatalf("%v: %+v", e, r)
		}
	}
	if a, b := c.note(), c.note(); a.HintExt != 10 || a.Engine != PE || b.HintExt != 11 || b.Engine != ACT {
		t.Fatalf("order: %+v then %+v", a, b)
	}
	if c.seqs[ACT].Counts().Records != 3 {
		t.Fatalf("ACT counts %+v", c.seqs[ACT].Counts().Records)
	}
}

// Two engines hand a token back and forth through two semaphores, with
// wait-then-decrement records; a lost wakeup would hang here.
func TestPingPong(t *testing.T) {
	const rounds = 2000
	c := newCore(t)
	take := func(idx uint8) *Record {
		return withEvents(NewRecord(OpNop), Events{WaitMode: WaitSemGE, WaitIdx: idx, WaitValue: 1, UpdateMode: UpdateSemDec, UpdateIdx: idx})
	}
	loop := func(give, get uint8, first bool) *Image {
		recs := []*Record{NewALUImm(ALUAdd, 1, 1, 1)}
		if first {
			recs = append(recs, semInc(give), take(get))
		} else {
			recs = append(recs, take(get), semInc(give))
		}
		return Assemble(0, append(recs, NewBranch(BranchLT, 1, rounds, -3*RecordSize), halt())...)
	}
	ch := c.start(context.Background(), map[Engine]*Image{PE: loop(1, 2, true), ACT: loop(2, 1, false)})
	for e, r := range c.results(ch, 2) {
		if r.State != Halted {
			t.Fatalf("%v: %+v", e, r)
		}
	}
	if s1, s2 := c.words.Semaphore(1), c.words.Semaphore(2); s1 != 0 || s2 != 0 {
		t.Fatalf("semaphores left %d %d", s1, s2)
	}
}

// A counted loop through CTRL_AL and CTRL_BR runs its body exactly so many
// times.
func TestLoop(t *testing.T) {
	c := newCore(t)
	img := Assemble(0x4000,
		NewALUImm(ALUAdd, 3, 3, 1),                // r3++
		NewNotify(0, 6),                           // one per round
		NewBranch(BranchLT, 3, 10, -2*RecordSize), // while r3 < 10
		halt())
	res := c.seqs[SP].Run(context.Background(), ImageProgram(img))
	if res.State != Halted || res.PC != 0x4000+3*RecordSize {
		t.Fatalf("%+v", res)
	}
	if n := len(c.notes); n != 10 {
		t.Fatalf("%d notifications", n)
	}
	cnt := c.seqs[SP].Counts()
	if cnt.Records != 31 || cnt.ByOpcode[OpCtrlBR] != 10 || cnt.ByOpcode[OpHalt] != 1 {
		t.Fatalf("counts %d, %d branches", cnt.Records, cnt.ByOpcode[OpCtrlBR])
	}
}

// An endless loop is bounded: the engine yields and ends when its context
// does.
func TestEndlessLoopStops(t *testing.T) {
	c := newCore(t)
	img := Assemble(0, NewRecord(OpNop), NewBranch(BranchAlways, 0, 0, -RecordSize))
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.start(ctx, map[Engine]*Image{POOL: img})
	deadline := time.Now().Add(budget)
	for c.seqs[POOL].Counts().Records < 10000 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if r := c.results(ch, 1)[POOL]; r.State != Stopped || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("%+v", r)
	}
}

// A wait that never ends is reported as such and ended by a reset; a host
// increment releases another.
func TestWaitForeverAndReset(t *testing.T) {
	c := newCore(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.start(ctx, map[Engine]*Image{
		DVE: Assemble(0x100, NewRecord(OpNop), NewWait(WaitSemGE, 5, 3), halt()),
		ACT: Assemble(0x200, NewWait(WaitEvtSetThenClear, 9, 0), halt()),
	})
	st := c.waitState(DVE, Waiting)
	if st.PC != 0x140 || !st.Wait.Semaphore || st.Wait.Idx != 5 || st.Wait.Now != 0 {
		t.Fatalf("status %v", st)
	}
	if want := "DVE waits at 0x140 (NOP(0xa4)) for semaphore 5 >= 3 (now 0)"; st.String() != want {
		t.Fatalf("%q, want %q", st, want)
	}
	c.waitState(ACT, Waiting)
	c.words.SetEvent(9, true) // the host's EVENT_SET
	if r := c.results(ch, 1)[ACT]; r.State != Halted || c.words.Event(9) {
		t.Fatalf("ACT %+v, event %v", r, c.words.Event(9))
	}
	c.words.UpdateSemaphore(5, SemAdd, 2) // not enough
	cancel()
	r := c.results(ch, 1)[DVE]
	if r.State != Stopped || r.PC != 0x140 || c.seqs[DVE].Status().State != Stopped {
		t.Fatalf("%+v", r)
	}
}

// Garbage stops its engine alone, with an error notification; the other
// engine of the core goes on.
func TestGarbageStopsOneEngine(t *testing.T) {
	c := newCore(t)
	bad := Assemble(0x2000, NewRecord(OpNop), NewRecord(OpNop))
	bad.Data[RecordSize] = 0x00 // an opcode that is not real
	ch := c.start(context.Background(), map[Engine]*Image{
		POOL: bad,
		PE:   Assemble(0, NewWait(WaitSemGE, 1, 1), halt()),
	})
	r := c.results(ch, 1)[POOL]
	if r.State != Faulted || !errors.Is(r.Fault, ErrUnknownOpcode) || r.PC != 0x2040 {
		t.Fatalf("%+v", r)
	}
	n := c.note()
	if n.Kind != NotifyError || n.Engine != POOL || n.ErrorID != ErrorIDSequencerFatal || n.Fault != r.Fault {
		t.Fatalf("%+v", n)
	}
	if st := c.seqs[POOL].Status(); st.State != Faulted || st.Fault == nil {
		t.Fatalf("%v", st)
	}
	c.waitState(PE, Waiting)
	c.words.UpdateSemaphore(1, SemAdd, 1)
	if r := c.results(ch, 1)[PE]; r.State != Halted {
		t.Fatalf("PE %+v", r)
	}
}

// Each structural rule stops the engine with its own reason.
func TestFaults(t *testing.T) {
	wordLen := NewRecord(OpNop)
	wordLen[offWordLen] = 15
	events := NewRecord(OpNop)
	events[offEvents] = 9 // a *_REG wait mode, value unknown
	alu := NewALUImm(99, 1, 1, 1)
	for _, tc := range []struct {
		name string
		img  *Image
		want error
	}{
		{"word len", Assemble(0, wordLen), ErrWordLen},
		{"pseudo", Assemble(0, NewRecord(0xD1)), ErrPseudoOpcode},
		{"invalid", Assemble(0, NewRecord(OpInvalid)), ErrUnknownOpcode},
		{"events", Assemble(0, events), ErrEvents},
		{"branch before", Assemble(0x40, NewBranch(BranchAlways, 0, 0, -RecordSize)), ErrBranchTarget},
		{"branch after", Assemble(0, NewBranch(BranchAlways, 0, 0, 2*RecordSize), halt()), ErrBranchTarget},
		{"branch unaligned", Assemble(0, NewBranch(BranchAlways, 0, 0, 8), halt()), ErrBranchTarget},
		{"run off", Assemble(0, NewRecord(OpNop)), ErrRunOff},
		{"alu op", Assemble(0, alu), ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCore(t)
			r := c.seqs[SP].Run(context.Background(), ImageProgram(tc.img))
			if r.State != Faulted || !errors.Is(r.Fault, tc.want) {
				t.Fatalf("%+v", r)
			}
		})
	}
}

type csrLog []CSRWrite

func (l *csrLog) WriteCSR(e Engine, addr uint64, v uint32, size uint8) error {
	*l = append(*l, CSRWrite{Size: size, Addr: addr, Value: v})
	if addr == 0xbad {
		return errors.New("no such register")
	}
	return nil
}

// CSR writes reach the core's CSR space in program order; a failed one
// stops the engine.
func TestCSRWrites(t *testing.T) {
	var log csrLog
	var w Words
	s := New(Config{Engine: PE, Sync: &w, CSR: &log})
	r := s.Run(context.Background(), ImageProgram(Assemble(0, NewCSRWrite(0x6001038, 1), NewCSRWrite(0x6001078, 2), NewCSRWrite(0xbad, 3), halt())))
	if r.State != Faulted || !errors.Is(r.Fault, ErrCSR) || r.PC != 0x80 {
		t.Fatalf("%+v", r)
	}
	if len(log) != 3 || log[0] != (CSRWrite{4, 0x6001038, 1}) || log[1].Value != 2 {
		t.Fatalf("%+v", log)
	}
}
