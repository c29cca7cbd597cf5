package chip

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Staged programs. A doorbell that finds a delivered exec request
// (request.go) starts one sequencer per engine with an image, each at
// its address, over the device's memory and the core's semaphores and
// events; their notifications go to the engines' INFER_STATUS queues and
// their faults to the core's ERROR queue, in place of the semantic
// START/END. The doorbell runs them as far as they go without waiting
// (sched.go); the runs go on after it returns: a program loops back to
// its wait gate, and the next doorbell's increment releases it.
// NC_RESET, the last process leaving the device and the device's close
// end them, whatever they wait for.

// coreRuns is the core's sequenced execution.
type coreRuns struct {
	wake seq.Waker // closed on every store to the core's semaphores and events

	mu      lockrank.Mutex[lockrank.Exec] // guards cur, parked, runner; never held across a record
	cur     *seqRun
	reg     map[int]*seqRun // register-started runs by slot (regrun.go)
	parked  []*engineRun    // engines blocked at a wait, run by nobody (sched.go)
	nparked atomic.Int32    // len(parked), read without mu
	runner  *runner         // the doorbell running the core's engines, if any
	wg      sync.WaitGroup

	// checking: the core checks a parked engine's wait under mu, so a
	// change that check makes (an event it takes) is only noted (due) and
	// woken once mu is released (sync.go).
	checking, due atomic.Bool

	areaOnce sync.Once
	area     Area // the engines' area: the core's, or a spare when it is unreachable (sync.go)
}

// seqRun is one request's engines.
type seqRun struct {
	req    execRequest
	ctx    context.Context // ends at NC_RESET, a replacing request or close
	cancel context.CancelFunc
	done   chan struct{} // closed when every engine returned
	live   atomic.Int32  // engines still running
	seqs   [seq.NumEngines]*seq.Sequencer
	progs  [seq.NumEngines]seq.Program
	// notify is where the engines' notifications go (their core's or
	// TOP_SP's NOTIFIC block); nil: the core's (hangend.go writes there).
	notify func(seq.Notification)
	// watched: the run's hang watcher was started, at its engines' first
	// write into a known actor (hangend.go).
	watched atomic.Bool
}

// alive reports whether r still has a running engine and was not
// cancelled.
func (r *seqRun) alive() bool {
	return r != nil && r.live.Load() > 0 && r.ctx.Err() == nil
}

// engineDone counts one of r's engines out.
func (r *seqRun) engineDone() {
	if r.live.Add(-1) == 0 {
		close(r.done)
	}
}

// current returns the core's current (or last) run.
func (c *Core) current() *seqRun {
	c.runs.mu.Lock()
	defer c.runs.mu.Unlock()
	return c.runs.cur
}

// runPrograms serves a doorbell with the core's staged programs, and
// reports whether it did; false leaves the doorbell its semantic answer.
// A doorbell without a new request belongs to a program still running
// (its gate takes the increment); one with a request for the images
// already running does too; a request for other images replaces them.
func (c *Core) runPrograms() bool {
	req := c.takeRequest()
	var r *seqRun
	if req != nil {
		c.learnDoorbell()
		r = c.newSeqRun(req)
	}
	cr := &c.runs
	cr.mu.Lock()
	cur := cr.cur
	if req == nil || (r != nil && cur.alive() && cur.req == r.req) {
		cr.mu.Unlock()
		if r != nil {
			r.cancel() // never started
		}
		if !cur.alive() {
			return false
		}
		c.chip.count(c.nc, "other_info/inference_count", 1)
		c.runInline(nil) // what the increment released
		return true
	}
	cr.cur = r
	cr.mu.Unlock()
	stopRun(cur)
	c.forgetActors()
	if r == nil {
		return false // a request naming no image: the semantic answer
	}
	c.chip.count(c.nc, "other_info/inference_count", 1)
	c.startRun(r)
	return true
}

// newSeqRun prepares a run of req's images; nil if it names none.
func (c *Core) newSeqRun(req *execRequest) *seqRun {
	r := &seqRun{req: *req, done: make(chan struct{})}
	r.notify = func(no seq.Notification) { c.seqNotify(r, no) }
	n := int32(0)
	for e, addr := range req.addr {
		if addr == 0 {
			continue
		}
		r.seqs[e] = seq.New(c.seqConfig(seq.Engine(e), r))
		r.progs[e] = c.seqProgram(addr)
		n++
	}
	if n == 0 {
		return nil
	}
	r.live.Store(n)
	// Before the run is published: a reset may cancel it at once.
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// seqConfig is what engine e of run r runs with: the core's semaphores
// and registers (the core itself; its registers as r writes them), its
// on-chip memory, the trace, r's notify, and the generation whose record
// layouts the core decodes (the sequencer's generations are numbered as
// the driver's architectures). A nil r is no run: nothing is notified.
func (c *Core) seqConfig(e seq.Engine, r *seqRun) seq.Config {
	var tr seq.Tracer
	if t := c.chip.tracer(c.nc, e); t != nil {
		tr = annotatingTracer{t, c}
	}
	cfg := seq.Config{Engine: e, Sync: c, CSR: c, Tracer: tr, OnChip: c.onchip, Gen: seq.Generation(c.cfg.arch.Arch)}
	if r != nil {
		cfg.CSR, cfg.Notify = &runCSR{c: c, r: r}, r.notify
	}
	return cfg
}

// startRun runs r's engines: as far as they go in the doorbell's
// goroutine, then each in its own (sched.go).
func (c *Core) startRun(r *seqRun) {
	var start []*engineRun
	for e, s := range r.seqs {
		if s == nil {
			continue
		}
		c.runs.wg.Add(1)
		start = append(start, &engineRun{r: r, e: seq.Engine(e)})
	}
	if r.ctx.Err() != nil { // reset before it started: the engines stay idle
		for range start {
			r.engineDone()
			c.runs.wg.Done()
		}
		return
	}
	for _, e := range start {
		e.x = r.seqs[e.e].Start(r.progs[e.e])
	}
	context.AfterFunc(r.ctx, func() { c.stopParked(r) })
	c.runInline(start) // the hang watcher starts only if an engine kicks a known actor (armHang)
}

// stopRun ends r's engines and waits until they returned.
func stopRun(r *seqRun) {
	if r == nil {
		return
	}
	r.cancel()
	lockrank.AssertUnlocked("exec: stopping a core's engines")
	<-r.done
}

// cancelRuns ends the core's run without waiting (NC_RESET, under the
// device lock); a delivered request not yet served is dropped. The run
// stays the core's last, for EngineStatus.
func (c *Core) cancelRuns() {
	c.request.Store(nil)
	if r := c.current(); r != nil {
		r.cancel()
	}
	for _, sr := range c.regRuns() {
		sr.r.cancel()
	}
}

// StopRuns ends the core's staged run as a core reset does, but clears
// nothing else (PSUM, a halt, queued doorbells stay), and waits until its
// engines returned or ctx ends: the driver calls it when nobody is left
// who could ring the core again, before it frees the memory they fetch
// from. The caller holds no lock.
func (c *Core) StopRuns(ctx context.Context) error {
	c.cancelRuns()
	var runs []*seqRun
	for _, sr := range c.regRuns() {
		runs = append(runs, sr.r)
	}
	if r := c.current(); r != nil {
		runs = append(runs, r)
	}
	lockrank.AssertUnlocked("exec: stopping a core's orphaned engines")
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("core %d: engines still running: %w", c.nc, ctx.Err())
		}
	}
	return nil
}

// stopAll ends the core's runs and waits for all their engines, those a
// reset cancelled included: nothing may fetch from the device's memory
// once it closes.
func (c *Core) stopAll() {
	c.cancelRuns()
	lockrank.AssertUnlocked("exec: stopping the device's engines")
	c.runs.wg.Wait()
}

// seqNotify writes an engine's notification into the core's queues: an
// explicit one or a debug_cmd START/END into the engine's INFER_STATUS
// queue, a fault into the ERROR queue. A run being stopped writes nothing
// more.
func (c *Core) seqNotify(r *seqRun, n seq.Notification) {
	if r.ctx.Err() != nil {
		return
	}
	emitNotification(c.notific, dhal.InferStatusSlot+int(n.Engine), n)
}

// emitNotification writes n into block b: an explicit record or a
// debug_cmd START/END into queue slot, a fault into the ERROR queue.
func emitNotification(b *nq.Block, slot int, n seq.Notification) {
	switch n.Kind {
	case seq.NotifyExplicit:
		b.Emit(slot, explicitRecord(n))
	case seq.NotifyDebug:
		for _, code := range debugCodes[n.DebugCmd] {
			b.Emit(slot, nq.InferRecord(int(n.Engine), code))
		}
	case seq.NotifyError:
		b.Emit(nq.ErrorSlot, nq.SequencerErrorRecord(int(n.Engine), n.PC, n.ErrorID))
	}
}

// debugCodes are the INFER_STATUS codes a record's debug_cmd asks for
// (guessed: docs/isa.md); NOTIFY and INS_FIELD have no known record.
var debugCodes = map[seq.DebugCmd][]uint16{
	seq.DebugStart:    {dhal.RecordStart},
	seq.DebugEnd:      {dhal.RecordEnd},
	seq.DebugStartEnd: {dhal.RecordStart, dhal.RecordEnd},
}

// explicitRecord is a NOTIFY record's EXPLICIT notification: the
// engine's type, debug_hint in the high nibble of byte 2 and
// debug_hint_extended (the subtype) in bytes 6-7.
func explicitRecord(n seq.Notification) nq.Record {
	rec := nq.InferRecord(int(n.Engine), n.HintExt)
	rec[2] = n.Hint << 4
	return rec
}
