package chip

import (
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// Runs that cannot finish. A run whose engines all wait, one of them on
// an actor neuronfs does not emulate (actors.go: a Q7 core or a TOP_SP;
// a write to some other register may be configuration, after which the
// program can still be released by the host), with no DMA queue of
// the core moving, would wait forever: the runtime's harvest then gives
// up after its own budget with NRT_TIMEOUT and, finalizing, drains the
// core's ERROR queue (59900437456 §4-5). So that what it drains names
// the wait, a run that stays so for Config.HangEnd is ended: each
// waiting engine writes the sequencer error record of a fault at its
// wait record (nq.SequencerErrorRecord, the line is the wait's address)
// and the run stops, as NC_RESET stops it. That the hardware reports a
// hung wait this way is *guessed* (docs/isa.md): no source says what a
// real engine leaves when nothing answers its wait. Only a wait after
// such a write can be ended, so a run's watcher starts at its engines'
// first write into a known actor (armHang): most runs never start one.

// hangEnd is how a run's watcher sees it: ended when two looks a budget
// apart find the same stuck state.
type hangEnd struct {
	c *Core
	r *seqRun
}

// armHang starts r's hang watcher, once, unless the core ends no hangs:
// called at each write of r's engines into a known actor, as only a run
// waiting after such a write can be ended (stuck); most runs never make
// one and start no goroutine or ticker. The writing engine is counted in
// runs.wg, so the watcher's Add cannot race stopAll's Wait.
func (c *Core) armHang(r *seqRun) {
	d := c.cfg.hangEnd
	if d <= 0 || r.watched.Load() || !r.watched.CompareAndSwap(false, true) {
		return
	}
	c.runs.wg.Add(1)
	c.hangWatchers.Add(1)
	go c.watchHang(r, d)
}

// watchHang ends r once it stays blocked on an unemulated actor for the
// core's hang budget; it returns when r ends. Run as the core's
// goroutine (counted in runs.wg).
func (c *Core) watchHang(r *seqRun, budget time.Duration) {
	defer c.runs.wg.Done()
	h := hangEnd{c: c, r: r}
	t := time.NewTicker(budget)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.done:
			return
		case <-t.C:
		}
		sig, stuck := h.stuck()
		if !stuck || sig != last {
			last = sig // a first look, or it moved: look again a budget later
			continue
		}
		h.end()
		return
	}
}

// stuck reports whether every live engine of the run waits, one on a
// known unemulated actor, and no DMA queue of the core moves; sig names the
// state (each engine's record and count) so two looks can be compared.
func (h hangEnd) stuck() (sig string, ok bool) {
	var b strings.Builder
	actor := false
	for e, s := range h.r.seqs {
		if s == nil {
			continue
		}
		st := s.Status()
		switch st.State {
		case seq.Running:
			return "", false
		case seq.Waiting:
			actor = actor || h.c.awaitsActor(seq.Engine(e))
		}
		fmt.Fprintf(&b, "%d:%v@%#x/%d ", e, st.State, st.PC, s.Counts().Records)
	}
	if !actor || h.c.dmaMoving() {
		return "", false
	}
	return b.String(), true
}

// end writes each waiting engine's error record into its block's ERROR
// queue (the core's, or a register-started TOP_SP's own), says once in the log what the run waited for, and stops it.
func (h hangEnd) end() {
	c, r := h.c, h.r
	if r.ctx.Err() != nil {
		return
	}
	var waits []string
	for e, s := range r.seqs {
		if s == nil {
			continue
		}
		st := s.Status()
		if st.State != seq.Waiting {
			continue
		}
		n := seq.Notification{Kind: seq.NotifyError, Engine: seq.Engine(e), PC: st.PC, ErrorID: seq.ErrorIDSequencerFatal}
		if r.notify != nil {
			r.notify(n) // a TOP_SP's run writes into its own block
		} else {
			emitNotification(c.notific, nq.ErrorSlot, n)
		}
		w := st.String()
		if a := c.awaits(seq.Engine(e)); a != "" {
			w += ", awaits " + a
		}
		waits = append(waits, w)
	}
	c.ended.Store(&endedRun{waits: waits})
	c.cfg.log.WithFields(logrus.Fields{"core": c.nc, "waits": strings.Join(waits, "; ")}).
		Warn("run ended: it waits on what neuronfs does not emulate")
	r.cancel()
}

// endedRun is the core's last run ended for waiting on nothing emulated.
type endedRun struct{ waits []string }

// EndedHang names the waits of the core's last run ended because nothing
// emulated could answer them; "" when none was.
func (c *Core) EndedHang() string {
	if e := c.ended.Load(); e != nil {
		return strings.Join(e.waits, "; ")
	}
	return ""
}
