package chip

import (
	"fmt"
	"strings"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// Hang is a core whose staged program cannot go on by itself: every
// engine still running waits on a semaphore or event, and none of the
// core's DMA queues is moving data that could release one. Only the host
// (a semaphore write, a doorbell, NC_RESET) can end it, which on the
// device is a timeout.
type Hang struct {
	Core    int
	Waiting []seq.Status // the engines that wait, each at its record
	Awaits  []string     // by Waiting: what nothing emulated answers, or "" (actors.go)
}

// String says which engine waits at which record for what: "core 1: PE
// waits at 0x1c0 (CTRL_ES(0xa0)) for semaphore 7 >= 1 (now 0); POOL ...,
// awaits Q7 core 0 of NeuronCore 1 (wrote 0x...)".
func (h Hang) String() string {
	parts := make([]string, len(h.Waiting))
	for i, s := range h.Waiting {
		parts[i] = s.String()
		if i < len(h.Awaits) && h.Awaits[i] != "" {
			parts[i] += ", awaits " + h.Awaits[i]
		}
	}
	return fmt.Sprintf("core %d: %s", h.Core, strings.Join(parts, "; "))
}

// EngineReport is one sequencer's state and counts.
type EngineReport struct {
	Status seq.Status
	Counts seq.Counts
	By     string // who started it: "" a delivered request, else its start register (regrun.go)
	// Awaits names, for a waiting engine, what it waits for that nothing
	// emulated answers (actors.go); "" otherwise.
	Awaits string
}

// EngineReports snapshots the core's current (or last) staged run, then
// its register-started runs (regrun.go) in slot order; nil when none ran.
func (c *Core) EngineReports() []EngineReport {
	var out []EngineReport
	add := func(r *seqRun, by string) {
		for e, sq := range r.seqs {
			if sq == nil {
				continue
			}
			rep := EngineReport{Status: sq.Status(), Counts: sq.Counts(), By: by}
			if rep.Status.State == seq.Waiting {
				rep.Awaits = c.awaits(seq.Engine(e))
			}
			out = append(out, rep)
		}
	}
	if r := c.current(); r != nil {
		add(r, "")
	}
	for _, sr := range c.regRuns() {
		add(sr.r, c.regStarter(sr.slot))
	}
	return out
}

// EngineStatus reports the core's engines as its last staged run left
// them; empty when none ran.
func (c *Core) EngineStatus() []seq.Status {
	var out []seq.Status
	for _, e := range c.EngineReports() {
		out = append(out, e.Status)
	}
	return out
}

// Blocked reports the core's hang; false when it has no staged run, an
// engine still runs, or a DMA queue of the core still moves.
func (c *Core) Blocked() (Hang, bool) {
	h := Hang{Core: c.nc}
	for _, e := range c.EngineReports() {
		switch e.Status.State {
		case seq.Running:
			return Hang{}, false
		case seq.Waiting:
			h.Waiting = append(h.Waiting, e.Status)
			h.Awaits = append(h.Awaits, e.Awaits)
		}
	}
	if len(h.Waiting) == 0 || c.dmaMoving() {
		return Hang{}, false
	}
	return h, true
}

// BlockedCores is the hang of each of the chip's cores that has one
// (Blocked), in core order; the slow-request log names them.
func (c *Chip) BlockedCores() []Hang {
	var out []Hang
	for _, core := range c.cores {
		if h, ok := core.Blocked(); ok {
			out = append(out, h)
		}
	}
	return out
}

// dmaMoving reports whether a queue of the core's DMA engines has work in
// flight: a worker copying, or descriptors rung and not yet done on an
// enabled queue (a stalled queue resumes when the stall lifts; an aborted
// one never does).
func (c *Core) dmaMoving() bool {
	for id := c.engFirst; id < c.engEnd; id++ {
		e := c.chip.engine(id)
		if e == nil {
			return false
		}
		for q := range dma.QueuesPerEngine {
			if !e.Idle(q) || pending(e, q) {
				return true
			}
		}
	}
	return false
}

// pending reports rung descriptors left on enabled queue q; a queue
// waiting for the host to stage them (dma/feed.go) moves nothing.
func pending(e *dma.Engine, q int) bool {
	if e.Starved(q) {
		return false
	}
	for _, d := range []dma.Dir{dma.TX, dma.RX} {
		st := e.QueueState(q, d)
		if st.SWStatus == uint32(dma.QueueEnabled) && st.HWStatus == 0 && st.Head != st.Tail {
			return true
		}
	}
	return false
}
