package seq

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// State is where an engine is.
type State uint8

const (
	Idle    State = iota // no run yet, or the last ended by a stop
	Running              // interpreting records
	Waiting              // blocked on a record's wait predicate
	Halted               // met HALT
	Stopped              // its run's context ended (NC_RESET, teardown)
	Faulted              // met garbage; Status.Fault says what
)

var stateNames = [...]string{"idle", "running", "waiting", "halted", "stopped", "faulted"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state%d", uint8(s))
}

// Status is a snapshot of one engine, for hang reports and the cores
// file: what it runs, and what it waits for.
type Status struct {
	Engine Engine
	State  State
	PC     uint64 // the record it waits at, stopped at or last passed a yield at
	Op     Opcode
	Wait   Wait   // when Waiting
	Fault  *Fault // when Faulted
}

func (s Status) String() string {
	switch s.State {
	case Waiting:
		return fmt.Sprintf("%v waits at %#x (%v) for %v", s.Engine, s.PC, s.Op, s.Wait)
	case Faulted:
		return s.Fault.Error()
	}
	return fmt.Sprintf("%v %v at %#x", s.Engine, s.State, s.PC)
}

// Counts are an engine's totals over all its runs.
type Counts struct {
	Records     uint64 // records issued
	NotEmulated uint64 // of which only the events were honoured
	Waits       uint64 // records that had to block on their predicate
	ByOpcode    [256]uint64
	// LastNotEmulated is the latest record only counted (nil if none):
	// where a user looks to learn which results were not computed.
	LastNotEmulated *Skipped
}

// Skipped is a valid record whose effect the engine did not compute: its
// events were honoured and its outputs hold what memory held before.
type Skipped struct {
	PC  uint64
	Op  Opcode
	Why string // "no source gives its effect", "fp8 operands", ...
}

func (s Skipped) String() string { return fmt.Sprintf("%v at %#x: %s", s.Op, s.PC, s.Why) }

// WhyNoSource is why a record of a real opcode whose layout or effect no
// source gives is only counted.
const WhyNoSource = "no source gives its effect"

// counters are Counts as published: the running goroutine adds its local
// tallies at every yield, wait and exit.
type counters struct {
	records, notEmulated, waits atomic.Uint64
	byOpcode                    [256]atomic.Uint64
	last                        atomic.Pointer[Skipped]
}

func (c *counters) snapshot() (out Counts) {
	out.Records, out.NotEmulated, out.Waits = c.records.Load(), c.notEmulated.Load(), c.waits.Load()
	for i := range c.byOpcode {
		out.ByOpcode[i] = c.byOpcode[i].Load()
	}
	out.LastNotEmulated = c.last.Load()
	return out
}

// tally is a run's unpublished counts, kept in the running goroutine so
// the hot loop touches no shared memory.
type tally struct {
	records, notEmulated, waits uint64
	byOpcode                    [256]uint64
	touched                     [4]uint64 // bitmap of byOpcode entries to publish
	last                        Skipped   // the latest record only counted, when lastSet
	lastSet                     bool
}

// count tallies the record at pc; why says why it was only counted ("" if
// it ran).
func (t *tally) count(op Opcode, pc uint64, why string) {
	t.records++
	t.byOpcode[op]++
	t.touched[op>>6] |= 1 << (op & 63)
	if why != "" {
		t.notEmulated++
		t.last, t.lastSet = Skipped{PC: pc, Op: op, Why: why}, true
	}
}

func (t *tally) publish(c *counters) {
	c.records.Add(t.records)
	c.notEmulated.Add(t.notEmulated)
	c.waits.Add(t.waits)
	t.records, t.notEmulated, t.waits = 0, 0, 0
	if t.lastSet {
		last := t.last
		c.last.Store(&last)
		t.lastSet = false
	}
	for w, bits := range t.touched {
		for ; bits != 0; bits &= bits - 1 {
			op := w<<6 | trailingZeros(bits)
			c.byOpcode[op].Add(t.byOpcode[op])
			t.byOpcode[op] = 0
		}
		t.touched[w] = 0
	}
}

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }
