package chip

import (
	"context"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Register-started runs. Besides a delivered exec request (run.go), an
// engine starts when the host writes its start registers (engineregs.go):
// the runtime's bring-up loads small programs (V2's timestamp calibration)
// this way, a TPB engine's and a TOP_SP's alike. Such a run is one engine
// on one program, scheduled as a request's engines are (sched.go), over
// the core's semaphores and events; it ends at HALT, a fault, NC_RESET or
// the device's close. A slot names who runs it: 0..NumEngines-1 the core's
// own engines, NumEngines+i the core's i-th TOP_SP.

// regSlotTopSP is the slot of the core's i-th TOP_SP.
func regSlotTopSP(i int) int { return int(seq.NumEngines) + i }

// startByRegister starts slot's engine e on the program at addr, its
// notifications going to notify; false when addr is 0 or the slot still
// runs a program (a real engine ignores a start while it runs: guessed,
// docs/isa.md). The caller holds no lock: the engine runs inline first.
func (c *Core) startByRegister(slot int, e seq.Engine, addr uint64, notify func(seq.Notification)) bool {
	if addr == 0 {
		return false
	}
	r := &seqRun{done: make(chan struct{})}
	r.req.addr[e] = addr
	r.notify = func(n seq.Notification) {
		if r.ctx.Err() == nil { // a run being stopped writes nothing more
			notify(n)
		}
	}
	r.seqs[e] = seq.New(c.seqConfig(e, r))
	r.progs[e] = c.seqProgram(addr)
	r.live.Store(1)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	cr := &c.runs
	cr.mu.Lock()
	if cr.reg[slot].alive() {
		cr.mu.Unlock()
		r.cancel()
		c.cfg.log.WithFields(logrus.Fields{"core": c.nc, "engine": e, "slot": slot, "addr": fmt.Sprintf("%#x", addr)}).
			Debug("start register written while the engine runs: ignored")
		return false
	}
	if cr.reg == nil {
		cr.reg = make(map[int]*seqRun)
	}
	cr.reg[slot] = r
	cr.mu.Unlock()
	lockrank.AssertUnlocked("exec: starting an engine by register")
	c.chip.count(c.nc, "other_info/register_starts", 1)
	c.startRun(r)
	return true
}

// regRunning reports whether slot runs a register-started program.
func (c *Core) regRunning(slot int) bool {
	c.runs.mu.Lock()
	defer c.runs.mu.Unlock()
	return c.runs.reg[slot].alive()
}

// engineBusy reports whether the core's engine e runs: a register-started
// program, or a delivered request's program not yet halted.
func (c *Core) engineBusy(e seq.Engine) bool {
	if c.regRunning(int(e)) {
		return true
	}
	r := c.current()
	if !r.alive() || r.seqs[e] == nil {
		return false
	}
	switch r.seqs[e].Status().State {
	case seq.Running, seq.Waiting:
		return true
	}
	return false
}

// slotRun is a register-started run and its slot.
type slotRun struct {
	slot int
	r    *seqRun
}

// regStarter names what started slot's run, for the cores view: its
// engine's START_CTRL, or the TOP_SP (by its number on the device).
func (c *Core) regStarter(slot int) string {
	if slot < int(seq.NumEngines) {
		return "START_CTRL"
	}
	f := c.cfg.arch
	per := max(1, f.TopSPsPerDevice/max(1, f.CoresPerDevice))
	return fmt.Sprintf("TOP_SP %d", c.nc*per+slot-int(seq.NumEngines))
}

// regRuns returns the core's register-started runs, in slot order.
func (c *Core) regRuns() []slotRun {
	cr := &c.runs
	cr.mu.Lock()
	defer cr.mu.Unlock()
	slots := make([]int, 0, len(cr.reg))
	for s := range cr.reg {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	out := make([]slotRun, len(slots))
	for i, s := range slots {
		out[i] = slotRun{s, cr.reg[s]}
	}
	return out
}
