package seq

import (
	"fmt"
	"time"
)

// Tracer hears what an engine does, for an execution trace (--exec-trace).
// It is called in the engine's goroutine, so it must not block on
// anything an engine does; a nil Config.Tracer costs the run one compare
// per record.
type Tracer interface {
	Trace(TraceEvent)
}

// TraceKind says what a TraceEvent covers.
type TraceKind uint8

const (
	// TraceRecords is a run of consecutive control records (N of them,
	// the first at PC): one event, so a loop of NOPs and branches stays
	// small.
	TraceRecords TraceKind = iota + 1
	// TraceRecord is one record of its own: a compute record (MATMUL,
	// TENSOR_SCALAR_ARITH, ...), emulated or not, or a CTRL_WR.
	TraceRecord
	// TraceWait is the time a record blocked on its wait predicate.
	TraceWait
	// TraceTruncated says the run reached its event limit: nothing more
	// of it is traced.
	TraceTruncated
)

// TraceEvent is one span of an engine's time.
type TraceEvent struct {
	Kind       TraceKind
	Engine     Engine
	PC         uint64 // the (first) record's device address
	Op         Opcode // the (first) record's opcode
	N          int    // TraceRecords: how many records
	Start, End time.Time
	Wait       Wait // TraceWait: what it waited for, Now as it passed (or stopped)
	Stopped    bool // TraceWait: the run ended while waiting
	// Detail is what a TraceRecord did beyond its opcode: a tensor-scalar
	// record's ops and dtypes, the register a CTRL_WR wrote ("dma 3 q2 tx
	// tail <- 1").
	Detail string
	// NotEmulated is why a TraceRecord was only counted ("" if it ran):
	// its outputs hold what memory held before.
	NotEmulated string
}

// DefaultTraceLimit is how many events one engine's run may trace before
// it stops tracing: a program looping on its gate would fill a disk.
const DefaultTraceLimit = 10000

// What is the predicate alone, without the value last seen: "semaphore 3
// >= 1", "event 5 set".
func (w Wait) What() string {
	in := w.Mode.info()
	if in == nil {
		return "nothing"
	}
	if w.Semaphore {
		return fmt.Sprintf("semaphore %d %s %d", w.Idx, in.name, int32(w.Value))
	}
	return fmt.Sprintf("event %d %s", w.Idx, in.name)
}

// tracing is a run's trace state, in the running goroutine; only a run
// with a tracer has one.
type tracing struct {
	t     Tracer
	e     Engine
	left  int       // events still allowed
	last  time.Time // end of the last event: where the next starts
	runPC uint64    // the pending run of control records
	runOp Opcode
	runN  int
}

func newTracing(t Tracer, e Engine, limit int) *tracing {
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	return &tracing{t: t, e: e, left: limit, last: time.Now()}
}

// emit sends ev unless the limit is reached; the last allowed slot says
// so instead.
func (tr *tracing) emit(ev TraceEvent) {
	switch {
	case tr.left <= 0:
		return
	case tr.left == 1:
		ev = TraceEvent{Kind: TraceTruncated, Engine: tr.e, PC: ev.PC, Start: ev.Start, End: ev.Start}
	}
	tr.left--
	ev.Engine = tr.e
	tr.t.Trace(ev)
}

// begin ends the pending run of control records where something of its
// own (a wait, an un-emulated record) starts, and returns that time.
func (tr *tracing) begin() time.Time {
	now := time.Now()
	tr.flushAt(now)
	return now
}

// record counts one control record that just completed: its run is
// stamped once, when it ends, so tracing a tight loop costs no clock
// read per record.
func (tr *tracing) record(pc uint64, op Opcode) {
	if tr.left <= 0 {
		return
	}
	if tr.runN == 0 {
		tr.runPC, tr.runOp = pc, op
	}
	tr.runN++
}

// single traces one record of its own that just completed; start is from
// begin.
// why is the record's NotEmulated.
func (tr *tracing) single(pc uint64, op Opcode, start time.Time, detail, why string) {
	if tr.left <= 0 {
		return
	}
	now := time.Now()
	tr.emit(TraceEvent{Kind: TraceRecord, PC: pc, Op: op, N: 1, Start: start, End: now, Detail: detail, NotEmulated: why})
	tr.last = now
}

// flush sends the pending run of control records, ending now.
func (tr *tracing) flush() { tr.flushAt(time.Now()) }

func (tr *tracing) flushAt(end time.Time) {
	if tr.runN == 0 {
		return
	}
	tr.emit(TraceEvent{Kind: TraceRecords, PC: tr.runPC, Op: tr.runOp, N: tr.runN, Start: tr.last, End: end})
	tr.last, tr.runN = end, 0
}

// waited traces a wait that blocked from start until now.
func (tr *tracing) waited(pc uint64, op Opcode, start time.Time, w Wait, stopped bool) {
	tr.waitedUntil(pc, op, start, time.Now(), w, stopped)
}

// waitedUntil traces a wait that blocked from start until end.
func (tr *tracing) waitedUntil(pc uint64, op Opcode, start, end time.Time, w Wait, stopped bool) {
	tr.emit(TraceEvent{Kind: TraceWait, PC: pc, Op: op, Start: start, End: end, Wait: w, Stopped: stopped})
	tr.last = end
}

// Name is the opcode's name alone ("MATMUL"), for trace event names.
func (op Opcode) Name() string {
	if n := opTable[op].name; n != "" {
		return n
	}
	return fmt.Sprintf("op%#02x", uint8(op))
}
