package chip

import (
	"fmt"
	"sync/atomic"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// Waits nothing answers. Some of what a real program waits for is done by
// parts of the chip neuronfs does not emulate: the POOL engine's Q7 cores
// (the library load), the TOP_SPs (collectives), the descriptor
// generators. A program kicks such an actor with a CTRL_WR into its
// registers, which the core takes and ignores (sync.go), then waits for a
// semaphore or event the actor would set: a wait that never ends. The
// core notes each engine's last such write, and a waiting engine's
// status, the cores view, the slow-request log and the exec trace name it
// ("awaits Q7 core 2 of NeuronCore 0 (wrote 0x...)"). That the wait
// after an ignored write is for its actor is *guessed* (docs/isa.md):
// the ids of the sync events these actors set are only in the runtime's
// binary.

// actorNote is an engine's last write into a register no emulated block
// acts on.
type actorNote struct {
	addr  uint64 // the device address written
	actor string // who would have answered
	// known: the write kicked a known actor (a Q7 core, a TOP_SP) rather
	// than some register; only such a wait ends a run (hangend.go).
	known bool
}

func (n *actorNote) String() string { return fmt.Sprintf("%s (wrote %#x)", n.actor, n.addr) }

// actorNotes holds each engine's last note, lock-free.
type actorNotes [seq.NumEngines]atomic.Pointer[actorNote]

// noteIgnoredWrite records engine e's write to BAR0 offset off (device
// address addr) that no emulated block acts on, and reports whether it
// kicked a known actor.
func (c *Core) noteIgnoredWrite(e seq.Engine, addr, off uint64) (known bool) {
	if int(e) >= len(c.actors) {
		return false
	}
	if n := c.actors[e].Load(); n != nil && n.addr == addr {
		return n.known // a loop kicking the same register allocates nothing
	}
	actor, known := actorOf(c.cfg.arch, off)
	c.actors[e].Store(&actorNote{addr: addr, actor: actor, known: known})
	return known
}

// awaits names what engine e, waiting, waits for that nothing emulated
// answers; "" when its last write had an emulated effect or none was made.
func (c *Core) awaits(e seq.Engine) string {
	if int(e) >= len(c.actors) {
		return ""
	}
	if n := c.actors[e].Load(); n != nil {
		return n.String()
	}
	return ""
}

// forgetActors clears the notes (a new run of the core's engines).
func (c *Core) forgetActors() {
	for i := range c.actors {
		c.actors[i].Store(nil)
	}
	c.ended.Store(nil) // hangend.go: the ended run is no longer the last
}

// awaitsActor reports whether engine e's last ignored write kicked a
// known actor (a Q7 core, a TOP_SP).
func (c *Core) awaitsActor(e seq.Engine) bool {
	if int(e) >= len(c.actors) {
		return false
	}
	n := c.actors[e].Load()
	return n != nil && n.known
}

// actorOf names the part of the chip at BAR0 offset off, and reports
// whether it is a known actor rather than a register.
func actorOf(f *dhal.ArchFacts, off uint64) (string, bool) {
	g := f.Q7Pool()
	for nc := range f.CoresPerDevice {
		base := f.TPBBase(nc)
		if off < base || off-base >= dhal.TPBWindowSize {
			continue
		}
		rel := off - base
		if rel >= g.Base && rel-g.Base < uint64(g.Cores)*g.Stride() {
			return fmt.Sprintf("Q7 core %d of NeuronCore %d", (rel-g.Base)/g.Stride(), nc), true
		}
		return fmt.Sprintf("NeuronCore %d TPB register +%#x", nc, rel), false
	}
	for ts := range f.TopSPsPerDevice {
		if base := f.TopSPWindow(ts); base != dhal.InvalidOffset && off >= base && off-base < dhal.TopSPWindowSize {
			return fmt.Sprintf("TOP_SP %d", ts), true
		}
	}
	return fmt.Sprintf("register %#x", off), false
}

// annotatingTracer names, on a wait's trace event, what the engine awaits
// that nothing emulated answers.
type annotatingTracer struct {
	seq.Tracer
	c *Core
}

func (t annotatingTracer) Trace(ev seq.TraceEvent) {
	if ev.Kind == seq.TraceWait && ev.Detail == "" {
		ev.Detail = t.c.awaits(ev.Engine)
	}
	t.Tracer.Trace(ev)
}
