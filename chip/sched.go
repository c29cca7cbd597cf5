package chip

import (
	"math"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Who runs a core's engines. An engine whose wait does not hold parks:
// no goroutine keeps it, the core lists it. A store to the core's
// semaphores or events (Wake) re-checks the parked engines and hands
// those it released to the chip's engine goroutines, where engines take
// turns (enginepool.go). A doorbell instead runs the engines it releases
// in its own goroutine (runInline): one after another, each until it
// waits, ends or used its share, taking along the engines they release in
// turn; so a program whose gate the doorbell opens reports back before
// the doorbell's caller returns, with no goroutine to wake. A doorbell
// holds its caller for inlineBudget records or inlineSlice at most,
// whichever ends first; what still runs then takes turns on the engine
// goroutines. Any order this gives is one engines of their own could give:
// every engine whose wait holds runs, and none runs past a wait that does
// not.

const (
	// inlineBudget bounds the records a doorbell runs before it hands the
	// engines to goroutines (an endless loop must not hold a FUSE request);
	// a control record costs some tens of nanoseconds.
	inlineBudget = 2048
	// inlineSlice bounds the time a doorbell runs engines: one compute
	// record (a MATMUL, a TENSOR_SCALAR over a whole tile) may take
	// milliseconds, so counting records does not bound its work. Checked
	// after each compute record and between shares, never per control
	// record: a short program's doorbell pays one clock read per share.
	inlineSlice = time.Millisecond
	// inlineShare is how many records one engine runs before the next
	// engine's turn, so engines that poll each other all go on.
	inlineShare = 256
	// maxRecords lets an engine's turn on a pool goroutine run until its
	// sequencer's yield interval or its slice.
	maxRecords = math.MaxInt
)

// engineRun is one engine of a run, owned by one goroutine at a time or
// parked.
type engineRun struct {
	r *seqRun
	e seq.Engine
	x *seq.Exec
}

// runner is a doorbell running its core's engines (runInline): engines
// released meanwhile join its queue.
type runner struct {
	ready []*engineRun
}

// ready re-checks e's wait under runs.mu; a change the check made (an
// event it took) sets due: the caller wakes the core once runs.mu is
// released.
func (c *Core) ready(e *engineRun, due *bool) bool {
	cr := &c.runs
	cr.checking.Store(true)
	ok := e.x.Ready()
	cr.checking.Store(false)
	if cr.due.Swap(false) {
		*due = true
	}
	return ok
}

// Wake releases the core's engines whose wait now holds: call it after
// every store to the core's area, whoever made it. It costs one atomic
// load when no engine is parked.
func (c *Core) Wake() {
	cr := &c.runs
	cr.wake.Wake()
	if cr.nparked.Load() == 0 {
		return
	}
	var buf [seq.NumEngines]*engineRun
	ready, due := buf[:0], false
	cr.mu.Lock()
	if rn := cr.runner; rn != nil {
		rn.ready = c.takeReady(rn.ready, &due)
		cr.mu.Unlock()
	} else {
		ready = c.takeReady(ready, &due)
		cr.mu.Unlock()
		for _, e := range ready {
			c.chip.enginePool().run(c, e)
		}
	}
	if due {
		c.Wake()
	}
}

// takeReady unparks the engines whose wait now holds onto dst; those of a
// stopped run stay for stopParked. Under runs.mu; due as ready.
func (c *Core) takeReady(dst []*engineRun, due *bool) []*engineRun {
	return c.runs.unpark(dst, func(e *engineRun) bool { return e.r.ctx.Err() == nil && c.ready(e, due) })
}

// unpark moves the parked engines take accepts onto dst. Under cr.mu.
func (cr *coreRuns) unpark(dst []*engineRun, take func(*engineRun) bool) []*engineRun {
	keep := cr.parked[:0]
	for _, e := range cr.parked {
		if take(e) {
			dst = append(dst, e)
			continue
		}
		keep = append(keep, e)
	}
	clear(cr.parked[len(keep):])
	cr.nparked.Add(int32(len(keep) - len(cr.parked)))
	cr.parked = keep
	return dst
}

// park lists e, blocked at a wait, as parked; false means its wait holds
// again already and its owner keeps running it. An engine of a stopped
// run ends instead.
func (c *Core) park(e *engineRun) bool {
	cr := &c.runs
	cr.mu.Lock()
	if err := e.r.ctx.Err(); err != nil {
		cr.mu.Unlock()
		e.x.Stop(err)
		c.endEngine(e)
		return true
	}
	// Counted before the re-check: a store Wake finds no parked engine
	// for came before it, and the re-check sees that store.
	cr.nparked.Add(1)
	due := false
	ok := c.ready(e, &due)
	if ok {
		cr.nparked.Add(-1)
	} else {
		cr.parked = append(cr.parked, e)
	}
	cr.mu.Unlock()
	if due {
		c.Wake()
	}
	return !ok
}

// stopParked ends r's parked engines once its context ended (NC_RESET, a
// replacing request, close); engines someone runs end at their next
// yield or wait.
func (c *Core) stopParked(r *seqRun) {
	cr := &c.runs
	cr.mu.Lock()
	stopped := cr.unpark(nil, func(e *engineRun) bool { return e.r == r })
	cr.mu.Unlock()
	for _, e := range stopped {
		e.x.Stop(r.ctx.Err())
		c.endEngine(e)
	}
}

// turn runs e on a pool goroutine until it parks, ends or used its slice
// (until); true means it still runs and waits for its next turn.
func (c *Core) turn(e *engineRun, until time.Time) bool {
	for {
		lockrank.AssertUnlocked("exec: running an engine")
		switch st, _ := e.x.ResumeUntil(e.r.ctx, maxRecords, until); st {
		case seq.Yielded:
			return true
		case seq.Blocked:
			if c.park(e) {
				return false
			}
		case seq.Ended:
			c.endEngine(e)
			return false
		}
	}
}

// runInline runs start and every engine the doorbell released in the
// calling goroutine, until each parked or ended or inlineBudget records
// ran or inlineSlice passed; the engines still running then take turns on
// the chip's engine goroutines. The caller holds no lock.
func (c *Core) runInline(start []*engineRun) {
	rn := c.becomeRunner(start)
	if rn == nil {
		return
	}
	until := time.Now().Add(inlineSlice)
	for left := inlineBudget; ; {
		e := c.nextInline(rn, left, until)
		if e == nil {
			return
		}
		lockrank.AssertUnlocked("exec: running an engine inline")
		st, n := e.x.ResumeUntil(e.r.ctx, min(left, inlineShare), until)
		left -= max(n, 1)
		switch st {
		case seq.Ended:
			c.endEngine(e)
			continue
		case seq.Blocked:
			if c.park(e) {
				continue
			}
		}
		c.runs.mu.Lock()
		rn.ready = append(rn.ready, e) // its turn again after the others'
		c.runs.mu.Unlock()
	}
}

// becomeRunner makes the calling doorbell the core's runner, with start
// and the engines its own store released; nil when another runs the core
// (never: one doorbell at a time serves a core), start then goes to
// goroutines.
func (c *Core) becomeRunner(start []*engineRun) *runner {
	cr := &c.runs
	rn := &runner{ready: start}
	cr.mu.Lock()
	if cr.runner != nil {
		cr.mu.Unlock()
		for _, e := range start {
			c.chip.enginePool().run(c, e)
		}
		return nil
	}
	cr.runner = rn
	due := false
	rn.ready = c.takeReady(rn.ready, &due) // the doorbell's own store
	cr.mu.Unlock()
	if due {
		c.Wake()
	}
	return rn
}

// nextInline takes the runner's next engine; nil when none is left or the
// budget or the slice (until) ran out, and then the runner hands what
// remains to the chip's engine goroutines.
func (c *Core) nextInline(rn *runner, left int, until time.Time) *engineRun {
	over := left <= 0 || time.Now().After(until) // read before the lock
	cr := &c.runs
	cr.mu.Lock()
	if len(rn.ready) == 0 || over {
		rest := rn.ready
		rn.ready, cr.runner = nil, nil
		cr.mu.Unlock()
		pool := c.chip.enginePool()
		for _, e := range rest {
			pool.run(c, e)
		}
		return nil
	}
	e := rn.ready[0]
	rn.ready = rn.ready[1:]
	cr.mu.Unlock()
	return e
}

// endEngine accounts for an engine that ended.
func (c *Core) endEngine(e *engineRun) {
	if res := e.x.Result(); res.State == seq.Faulted {
		c.cfg.log.WithFields(logrus.Fields{"core": c.nc, "engine": e.e}).Warn(res.Fault)
	}
	e.r.engineDone()
	c.runs.wg.Done()
}
