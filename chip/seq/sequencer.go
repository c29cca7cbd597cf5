package seq

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	Gen        Generation         // the record layouts that differ by generation; 0: DefaultGeneration

	elementsOnly bool // tests: the element walker only, never the row fast path (rows.go)
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
	pe     *peState    // PE: latched weights, as regs, across records and runs
	act    *actState   // ACT: the per-partition accumulators, likewise
	rowBuf *rowScratch // the row kernels' scratch, made when first needed
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

// ResetRegisters clears the register file, and the engine's other state
// (the PE's latched weights, the ACT's accumulators), as NC_RESET does;
// call it only between runs.
func (s *Sequencer) ResetRegisters() { s.regs, s.pe, s.act = [256]uint32{}, nil, nil }

func (s *Sequencer) publish(st State, pc uint64, op Opcode, w Wait, f *Fault) {
	s.status.Store(&Status{Engine: s.cfg.Engine, State: st, PC: pc, Op: op, Wait: w, Fault: f})
}

// run is one run's state, owned by one goroutine at a time.
type run struct {
	*Sequencer
	p     Program
	img   *Image // set when the program is an Image: fetch without a copy
	rec   Record
	tally tally
	tr    *tracing // nil unless the engine has a Tracer

	pc     uint64
	cur    *Record // the record being issued while it waits
	passed uint8   // cur's waits already passed: its events', then CTRL_ES's
	left   int     // records until the next yield
	blk    blocked
	res    Result
	ended  bool
	ctx    context.Context // the Resume under way's: long records check its end
}

// blocked is the wait a run stopped at.
type blocked struct {
	on    bool
	ok    bool // Ready saw it hold: the next Resume goes past it
	in    *waitInfo
	ev    Events
	op    Opcode
	w     Wait
	since time.Time // tracing: when it started to wait
	until time.Time // tracing: when Ready saw it hold
}

// Run interprets p until the engine halts, meets garbage, or ctx ends
// (NC_RESET), whatever it is waiting for. It holds no lock at any point.
func (s *Sequencer) Run(ctx context.Context, p Program) Result {
	x := s.Start(p)
	done := ctx.Done()
	for {
		st, _ := x.Resume(ctx, math.MaxInt)
		switch st {
		case Ended:
			return x.Result()
		case Yielded:
			runtime.Gosched()
			continue
		}
		for {
			ch := s.cfg.Sync.Changed() // before the re-check: a change after it closes ch
			if x.Ready() {
				break
			}
			lockrank.AssertUnlocked("seq: engine wait")
			select {
			case <-ch:
				continue
			case <-done:
				return x.Stop(ctx.Err())
			}
		}
	}
}

// Exec is one run of a program, interpreted in steps by whoever owns it:
// a core may run several engines in one goroutine and hand an engine that
// waits to another. One goroutine at a time calls its methods.
type Exec struct{ run }

// Step is why Resume returned.
type Step uint8

const (
	// Blocked: a record's wait does not hold; Ready says when it does.
	Blocked Step = iota + 1
	// Yielded: the engine ran its share of records and goes on when
	// Resume is called again.
	Yielded
	// Ended: halted, faulted or stopped; Result says how.
	Ended
)

// Start begins a run of p; nothing runs until Resume.
func (s *Sequencer) Start(p Program) *Exec {
	x := &Exec{run{Sequencer: s, p: p, pc: p.Start, left: s.cfg.YieldEvery}}
	x.img, _ = p.Mem.(*Image)
	if s.cfg.Tracer != nil {
		x.tr = newTracing(s.cfg.Tracer, s.cfg.Engine, s.cfg.TraceLimit)
	}
	s.publish(Running, p.Start, 0, Wait{}, nil)
	return x
}

// Result is how the run ended; valid once Resume returned Ended.
func (x *Exec) Result() Result { return x.res }

// Resume interprets records until a wait does not hold, the run ends, or
// max records (or the engine's yield interval) ran, and returns why and
// how many records it issued. The end of ctx (NC_RESET) ends the run at
// a yield, and at once when Resume is called.
func (x *Exec) Resume(ctx context.Context, max int) (Step, int) {
	return x.ResumeUntil(ctx, max, time.Time{})
}

// ResumeUntil is Resume that also yields once the clock passed until
// (zero: never), looked at after each record that is not a control
// record: a count of records bounds control loops, but one compute record
// may take milliseconds. A record is never cut: the slice is overrun by
// at most one record. A slice's end publishes the counts and trace as a
// yield does.
func (x *Exec) ResumeUntil(ctx context.Context, max int, until time.Time) (Step, int) {
	if x.ended {
		return Ended, 0
	}
	stop := ctx.Done()
	if closed(stop) {
		x.finish(x.stopResult(ctx.Err()))
		return Ended, 0
	}
	x.ctx = ctx
	defer func() { x.ctx = nil }()
	if b := &x.blk; b.on {
		if !b.ok && !x.Ready() {
			return Blocked, 0
		}
		b.on = false
		if x.tr != nil {
			x.tr.waitedUntil(x.pc, b.op, b.since, b.until, b.w, false)
		}
	}
	for n := 0; ; {
		if n == max {
			return Yielded, n // the owner's share: counts and trace go on
		}
		if x.left--; x.left == 0 {
			x.left = x.cfg.YieldEvery
			x.yield()
			if closed(stop) {
				x.finish(x.stopResult(ctx.Err()))
				return Ended, n
			}
			return Yielded, n
		}
		rec := x.cur
		var err error
		if rec == nil {
			rec, err = x.fetch(x.pc)
			if err == nil {
				err = rec.Validate()
			}
			if err != nil {
				x.finish(x.fault(x.pc, rec, err))
				return Ended, n
			}
		}
		next, st, wait, err := x.step(x.pc, rec)
		switch {
		case err == errStopped:
			x.finish(x.stopResult(ctx.Err()))
			return Ended, n
		case err != nil:
			x.finish(x.fault(x.pc, rec, err))
			return Ended, n
		case wait:
			x.cur = rec
			return Blocked, n
		}
		x.cur, x.passed = nil, 0
		n++
		if st == Halted {
			x.finish(Result{State: Halted, PC: x.pc})
			return Ended, n
		}
		x.pc = next
		if !until.IsZero() && rec.Opcode().Class() != ClassControl && time.Now().After(until) {
			x.yield() // a slice is milliseconds: what it did shows as it goes
			return Yielded, n
		}
	}
}

// Ready re-checks the wait the run is blocked at, taking the event when
// the wait says so; true means the next Resume goes on past it. It holds
// no lock and never blocks, so a core may call it under its own.
func (x *Exec) Ready() bool {
	b := &x.blk
	if !b.on || b.ok {
		return !x.ended
	}
	now, ok := x.try(b.in, b.ev)
	if !ok {
		if now != b.w.Now {
			b.w.Now = now
			x.publish(Waiting, x.pc, b.op, b.w, nil)
		}
		return false
	}
	b.w.Now, b.ok = now, true
	x.passed++
	if x.tr != nil {
		b.until = time.Now()
	}
	x.publish(Running, x.pc, b.op, Wait{}, nil)
	return true
}

// Stop ends a run that is not running (blocked, yielded or not yet
// resumed) as its context's end does; err is that context's error.
func (x *Exec) Stop(err error) Result {
	if !x.ended {
		x.finish(x.stopResult(err))
	}
	return x.res
}

// stopResult is the Result of a run stopped where it is; a wait it was
// blocked at is traced as cut short.
func (x *Exec) stopResult(err error) Result {
	if b := &x.blk; b.on && x.tr != nil {
		x.tr.waited(x.pc, b.op, b.since, b.w, true)
	}
	if err == nil {
		err = context.Canceled
	}
	return Result{State: Stopped, PC: x.pc, Err: err}
}

// yield publishes what the run did so far: its counts and trace.
func (x *Exec) yield() {
	x.tally.publish(&x.counts)
	if x.tr != nil {
		x.tr.flush() // a long loop shows as it goes
	}
}

// finish ends the run with res and publishes it.
func (x *Exec) finish(res Result) {
	x.ended, x.res, x.blk.on = true, res, false
	if x.tr != nil {
		x.tr.flush()
	}
	x.tally.publish(&x.counts)
	var op Opcode
	if res.Fault != nil {
		op = res.Fault.Opcode
	}
	x.publish(res.State, res.PC, op, Wait{}, res.Fault)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
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

// step issues one valid record: its waits, its effect, its update. It
// returns the next pc or Halted, or wait when a predicate does not hold:
// the record is issued again, past the waits it passed, once it does.
func (r *run) step(pc uint64, rec *Record) (next uint64, st State, wait bool, err error) {
	op := rec.Opcode()
	ev := rec.Events()
	if r.passed == 0 {
		if ev.WaitMode != WaitNone && !r.pass(op, ev) {
			return 0, 0, true, nil
		}
		r.passed = 1
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
	why := "" // why the record is only counted
	if class == ClassNotEmulated {
		why = WhyNoSource
	}
	switch op {
	case OpCtrlES:
		es := rec.ESEvents()
		if r.passed == 1 {
			if es.WaitMode != WaitNone && !r.pass(op, es) {
				return 0, 0, true, nil
			}
			r.passed = 2
		}
		r.update(es)
	case OpHalt:
		st = Halted
	case OpCtrlWR:
		if err := r.csrWrite(rec.CSRWrite()); err != nil {
			return 0, 0, false, err
		}
	case OpNotify:
		r.notify(Notification{Kind: NotifyExplicit, Engine: r.cfg.Engine, PC: pc, Hint: rec.DebugHint(), HintExt: rec.NotifyHintExt()})
	case OpCtrlAL:
		if err := r.alu(rec.ALU()); err != nil {
			return 0, 0, false, err
		}
	case OpCtrlBR:
		if next, err = r.branch(pc, rec.Branch()); err != nil {
			return 0, 0, false, err
		}
	default:
		if h := computeOps[op]; h != nil {
			skipped, stopped, err := h(r, rec)
			switch {
			case err != nil:
				return 0, 0, false, err
			case stopped:
				return 0, 0, false, errStopped
			}
			why = skipped
		}
	}
	if c := rec.DebugCmd(); c != DebugNone {
		r.notify(Notification{Kind: NotifyDebug, Engine: r.cfg.Engine, PC: pc, Hint: rec.DebugHint(), DebugCmd: c})
	}
	r.update(ev)
	r.tally.count(op, pc, why)
	if r.tr != nil {
		if own {
			r.tr.single(pc, op, t0, r.detail(rec), why)
		} else {
			r.tr.record(pc, op)
		}
	}
	return next, st, false, nil
}

// computeRecord runs one compute record. It returns why a valid record
// was only counted ("" if it ran), whether the run was stopped in the
// middle of it, and an error that stops the engine (a field the
// validators reject, memory outside the on-chip regions).
type computeRecord func(r *run, rec *Record) (skipped string, stopped bool, err error)

// computeOps are the compute records interpreted, by opcode; their
// opcodes are ClassCompute in the opcode table (a test keeps the two in
// step). Every other real opcode is counted, not emulated.
var computeOps = map[Opcode]computeRecord{
	OpTensorScalar:          (*run).tensorScalar,
	OpTensorScalarBitvec:    (*run).tensorScalar,
	OpTensorScalarPtr:       (*run).tensorScalar,
	OpTensorScalarPtrBitvec: (*run).tensorScalar,
	OpTensorTensor:          (*run).tensorTensor,
	OpTensorTensorBitvec:    (*run).tensorTensor,
	OpCopy:                  (*run).move,
	OpCast:                  (*run).move,
	OpReciprocal:            (*run).move,
	OpTensorReduce:          (*run).tensorReduce,
	OpTensorReduceBitvec:    (*run).tensorReduce,
	OpCopyPredicated:        (*run).predicated,
	OpCastPredicated:        (*run).predicated,
	OpSTTArith:              (*run).stt,
	OpSTTBitvec:             (*run).stt,
	OpTensorTensorScan:      (*run).stt,
	OpExponential:           (*run).exponential,
	OpActivateQuantize:      (*run).activateQuantize,
	OpStreamTranspose:       (*run).streamTranspose,
	OpDveReadAccumulator:    (*run).readAccumulator,
	OpMemset:                (*run).memset,
	OpIota:                  (*run).iota,
	OpLdWeights:             (*run).ldWeights,
	OpMatmul:                (*run).matmul,
	OpActivate:              (*run).activate,
	OpActReadAccumulator:    (*run).readAccumulator,
	OpTensorLoad:            (*run).tensorLoad,
	OpActTableLoad:          func(*run, *Record) (string, bool, error) { return "", false, nil },
}

// errStopped is how a record that checks for the end of the run midway
// (a long tensor walk) says it met it.
var errStopped = errors.New("run stopped")

// stopped reports whether the run's context ended.
func (r *run) stopped() bool { return r.ctx != nil && closed(r.ctx.Done()) }

// detail is what a trace says of a record beyond its opcode.
func (r *run) detail(rec *Record) string {
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

// pass checks ev's predicate at the record at r.pc; when it does not
// hold, the run blocks there (Ready re-checks it).
func (r *run) pass(op Opcode, ev Events) bool {
	in := ev.WaitMode.info()
	now, ok := r.try(in, ev)
	if ok {
		return true
	}
	r.tally.waits++
	r.tally.publish(&r.counts)
	b := &r.blk
	*b = blocked{on: true, in: in, ev: ev, op: op, w: Wait{Semaphore: in.sem, Idx: ev.WaitIdx, Mode: ev.WaitMode, Value: ev.WaitValue, Now: now}}
	if r.tr != nil {
		b.since = r.tr.begin()
	}
	r.publish(Waiting, r.pc, op, b.w, nil)
	return false
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
