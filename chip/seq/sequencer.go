package seq

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// DefaultYieldEvery is how many records an engine runs between looks at
// its stop signal; an endless loop costs one goroutine's CPU and yields
// the processor this often.
const DefaultYieldEvery = 4096

// Config is what a core hands one engine's sequencer.
type Config struct {
	Engine     Engine
	Sync       Sync               // the core's semaphores and events (nil: private ones)
	CSR        CSR                // nil: CSR writes are dropped
	Notify     func(Notification) // nil: notifications are dropped
	YieldEvery int                // 0: DefaultYieldEvery
	Tracer     Tracer             // nil: no execution trace (trace.go)
	TraceLimit int                // events per run; 0: DefaultTraceLimit
	OnChip     OnChip             // the core's SBUF and PSUM; nil: compute records are only counted
}

// Program is one run's image: the engine starts at Start and may fetch
// and branch anywhere in [Lo, Hi), in whole records from Lo.
type Program struct {
	Mem    Memory
	Start  uint64
	Lo, Hi uint64
}

// ImageProgram runs a whole Image from its first record.
func ImageProgram(m *Image) Program {
	return Program{Mem: m, Start: m.Base, Lo: m.Base, Hi: m.End()}
}

// Result is how a run ended.
type Result struct {
	State State // Halted, Stopped or Faulted
	PC    uint64
	Fault *Fault // Faulted
	Err   error  // Stopped: the context's error
}

// Sequencer is one engine of one core. Run interprets a program in the
// calling goroutine, one run at a time; Status and Counts may be read
// from any goroutine.
type Sequencer struct {
	cfg    Config
	regs   [256]uint32 // the register file; only the running goroutine touches it
	status atomic.Pointer[Status]
	counts counters
}

// New returns an idle sequencer.
func New(cfg Config) *Sequencer {
	if cfg.YieldEvery <= 0 {
		cfg.YieldEvery = DefaultYieldEvery
	}
	if cfg.Sync == nil {
		cfg.Sync = new(Words)
	}
	s := &Sequencer{cfg: cfg}
	s.status.Store(&Status{Engine: cfg.Engine})
	return s
}

// Status returns the engine's latest published state.
func (s *Sequencer) Status() Status { return *s.status.Load() }

// Counts returns the engine's totals.
func (s *Sequencer) Counts() Counts { return s.counts.snapshot() }

// ResetRegisters clears the register file, as NC_RESET does; call it only
// between runs.
func (s *Sequencer) ResetRegisters() { s.regs = [256]uint32{} }

func (s *Sequencer) publish(st State, pc uint64, op Opcode, w Wait, f *Fault) {
	s.status.Store(&Status{Engine: s.cfg.Engine, State: st, PC: pc, Op: op, Wait: w, Fault: f})
}

// run is one Run's state, in the running goroutine.
type run struct {
	*Sequencer
	p     Program
	done  <-chan struct{}
	img   *Image // set when the program is an Image: fetch without a copy
	rec   Record
	tally tally
	tr    *tracing // nil unless the engine has a Tracer
}

// Run interprets p until the engine halts, meets garbage, or ctx ends
// (NC_RESET), whatever it is waiting for. It holds no lock at any point.
func (s *Sequencer) Run(ctx context.Context, p Program) Result {
	r := &run{Sequencer: s, p: p, done: ctx.Done()}
	r.img, _ = p.Mem.(*Image)
	if s.cfg.Tracer != nil {
		r.tr = newTracing(s.cfg.Tracer, s.cfg.Engine, s.cfg.TraceLimit)
	}
	s.publish(Running, p.Start, 0, Wait{}, nil)
	res := r.loop(ctx)
	if r.tr != nil {
		r.tr.flush()
	}
	r.tally.publish(&s.counts)
	var op Opcode
	if res.Fault != nil {
		op = res.Fault.Opcode
	}
	s.publish(res.State, res.PC, op, Wait{}, res.Fault)
	return res
}

func (r *run) loop(ctx context.Context) Result {
	pc, budget := r.p.Start, r.cfg.YieldEvery
	for {
		if budget--; budget == 0 {
			budget = r.cfg.YieldEvery
			r.tally.publish(&r.counts)
			if r.tr != nil {
				r.tr.flush() // a long loop shows as it goes
			}
			if r.stopped() {
				return Result{State: Stopped, PC: pc, Err: ctx.Err()}
			}
			runtime.Gosched()
		}
		rec, err := r.fetch(pc)
		if err == nil {
			err = rec.Validate()
		}
		if err != nil {
			return r.fault(pc, rec, err)
		}
		next, st, err := r.step(pc, rec)
		switch {
		case err != nil:
			return r.fault(pc, rec, err)
		case st == Stopped:
			return Result{State: Stopped, PC: pc, Err: ctx.Err()}
		case st == Halted:
			return Result{State: Halted, PC: pc}
		}
		pc = next
	}
}

func (r *run) stopped() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// fetch returns the record at pc, which must lie whole inside the image.
func (r *run) fetch(pc uint64) (*Record, error) {
	if pc < r.p.Lo || pc >= r.p.Hi || r.p.Hi-pc < RecordSize {
		return nil, fmt.Errorf("%w: %#x not in [%#x, %#x)", ErrRunOff, pc, r.p.Lo, r.p.Hi)
	}
	if m := r.img; m != nil && len(m.Data) >= RecordSize && pc >= m.Base && pc-m.Base <= uint64(len(m.Data)-RecordSize) {
		return (*Record)(m.Data[pc-m.Base:]), nil
	}
	if err := r.p.Mem.Fetch(pc, &r.rec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	return &r.rec, nil
}

// fault stops the engine on garbage and reports it to the core.
func (r *run) fault(pc uint64, rec *Record, err error) Result {
	f := &Fault{Engine: r.cfg.Engine, PC: pc, Err: err}
	if rec != nil {
		f.Opcode = rec.Opcode()
	}
	r.notify(Notification{Kind: NotifyError, Engine: r.cfg.Engine, PC: pc, ErrorID: ErrorIDSequencerFatal, Fault: f})
	return Result{State: Faulted, PC: pc, Fault: f}
}

func (r *run) notify(n Notification) {
	if r.cfg.Notify != nil {
		r.cfg.Notify(n)
	}
}

// step issues one valid record: its wait, its effect, its update. It
// returns the next pc, or Halted/Stopped.
func (r *run) step(pc uint64, rec *Record) (next uint64, st State, err error) {
	op := rec.Opcode()
	ev := rec.Events()
	if ev.WaitMode != WaitNone && !r.wait(pc, op, ev) {
		return 0, Stopped, nil
	}
	next = pc + RecordSize
	class := op.Class()
	// A record of its own in the trace: all but the control records,
	// which are traced in runs, and CTRL_WR, which starts DMA.
	own := class != ClassControl || op == OpCtrlWR
	var t0 time.Time
	if r.tr != nil && own {
		t0 = r.tr.begin()
	}
	emulated := class != ClassNotEmulated
	switch op {
	case OpCtrlES:
		es := rec.ESEvents()
		if es.WaitMode != WaitNone && !r.wait(pc, op, es) {
			return 0, Stopped, nil
		}
		r.update(es)
	case OpHalt:
		st = Halted
	case OpCtrlWR:
		if err := r.csrWrite(rec.CSRWrite()); err != nil {
			return 0, 0, err
		}
	case OpNotify:
		r.notify(Notification{Kind: NotifyExplicit, Engine: r.cfg.Engine, PC: pc, Hint: rec.DebugHint(), HintExt: rec.NotifyHintExt()})
	case OpCtrlAL:
		if err := r.alu(rec.ALU()); err != nil {
			return 0, 0, err
		}
	case OpCtrlBR:
		if next, err = r.branch(pc, rec.Branch()); err != nil {
			return 0, 0, err
		}
	case OpTensorScalar:
		skipped, stopped, err := r.tensorScalar(rec)
		switch {
		case err != nil:
			return 0, 0, err
		case stopped:
			return 0, Stopped, nil
		}
		emulated = skipped == ""
	}
	if c := rec.DebugCmd(); c != DebugNone {
		r.notify(Notification{Kind: NotifyDebug, Engine: r.cfg.Engine, PC: pc, Hint: rec.DebugHint(), DebugCmd: c})
	}
	r.update(ev)
	r.tally.count(op, !emulated)
	if r.tr != nil {
		if own {
			r.tr.single(pc, op, t0, r.detail(rec, emulated))
		} else {
			r.tr.record(pc, op)
		}
	}
	return next, st, nil
}

// detail is what a trace says of a record beyond its opcode.
func (r *run) detail(rec *Record, emulated bool) string {
	switch rec.Opcode() {
	case OpCtrlWR:
		w := rec.CSRWrite()
		if n, ok := r.cfg.CSR.(CSRNamer); ok {
			if name := n.NameCSR(w.Addr); name != "" {
				return fmt.Sprintf("%s <- %d", name, w.Value)
			}
		}
		return fmt.Sprintf("%#x <- %#x", w.Addr, w.Value)
	case OpTensorScalar:
		ts := rec.TensorScalar()
		if !emulated {
			return ts.Detail() + " (not emulated)"
		}
		return ts.Detail()
	}
	return ""
}

func (r *run) csrWrite(w CSRWrite) error {
	if r.cfg.CSR == nil {
		return nil
	}
	if err := r.cfg.CSR.WriteCSR(r.cfg.Engine, w.Addr, w.Value, w.Size); err != nil {
		return fmt.Errorf("%w: %#x <- %#x: %v", ErrCSR, w.Addr, w.Value, err)
	}
	return nil
}

// update applies a record's update once it ran. READ and COMPLETE forms
// coincide here: every record completes as it issues.
func (r *run) update(ev Events) {
	in := ev.UpdateMode.info()
	if in == nil {
		return
	}
	sy := r.cfg.Sync
	if !in.sem {
		sy.SetEvent(ev.UpdateIdx, in.evt)
		return
	}
	v := uint32(1)
	if in.imm {
		v = ev.UpdateValue
	}
	sy.UpdateSemaphore(ev.UpdateIdx, in.op, v)
}

// wait blocks until ev's predicate holds; false means the run was stopped
// meanwhile.
func (r *run) wait(pc uint64, op Opcode, ev Events) bool {
	in := ev.WaitMode.info()
	if _, ok := r.try(in, ev); ok {
		return true
	}
	r.tally.waits++
	r.tally.publish(&r.counts)
	var since time.Time
	if r.tr != nil {
		since = r.tr.begin()
	}
	for {
		ch := r.cfg.Sync.Changed() // before the re-check: a change after it closes ch
		now, ok := r.try(in, ev)
		w := Wait{Semaphore: in.sem, Idx: ev.WaitIdx, Mode: ev.WaitMode, Value: ev.WaitValue, Now: now}
		if ok {
			if r.tr != nil {
				r.tr.waited(pc, op, since, w, false)
			}
			r.publish(Running, pc, op, Wait{}, nil)
			return true
		}
		r.publish(Waiting, pc, op, w, nil)
		lockrank.AssertUnlocked("seq: engine wait")
		select {
		case <-ch:
		case <-r.done:
			if r.tr != nil {
				r.tr.waited(pc, op, since, w, true)
			}
			return false
		}
	}
}

// try checks a predicate once, taking the event when the mode says so;
// now is what it saw.
func (r *run) try(in *waitInfo, ev Events) (now uint32, ok bool) {
	sy := r.cfg.Sync
	if in.sem {
		v := sy.Semaphore(ev.WaitIdx)
		return v, in.ok(int32(v), int32(ev.WaitValue))
	}
	if in.then < 0 {
		set := sy.Event(ev.WaitIdx)
		return b2u(set), set == in.evt
	}
	if sy.CompareAndSetEvent(ev.WaitIdx, in.evt, in.then == 1) {
		return b2u(in.evt), true
	}
	return b2u(!in.evt), false
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
