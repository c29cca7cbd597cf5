package chip

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// The exec doorbell. An increment of a core's inference-start semaphore
// (by ioctl, BAR0 write, mapped store or DMA) wakes the core's engines as
// the runtime's programs would: the core runs what was staged on its
// device-driven DMA queues (the exec queue), then every compute engine
// reports START and END in its INFER_STATUS queue (NOTIFIC slots 4-8).
// When the exec queue delivered a request naming the engines' images, the
// engines run those programs instead (run.go). Value 2 after the runtime
// queued a halt request stops the idle program: each engine reports INIT
// then HALT and the core ignores doorbells until it is reset.

// execQueueWait bounds how long a run waits for staged DMA.
const execQueueWait = 10 * time.Second

// onSemIncrement runs after semaphore idx went up by v: an increment of
// the inference-start semaphore (doorbellSem) by 1 or 2 rings the
// doorbell (Doorbell) and reports true; the doorbell then wakes the
// engines (Wake), or runs those the increment released. An async doorbell is served in a
// goroutine (an engine's write must not run the core's program in its
// worker).
func (c *Core) onSemIncrement(idx uint32, v uint32, async bool) bool {
	if start := c.doorbellSem(); start >= 0 && idx != uint32(start) {
		return false
	}
	if v != DoorbellRun && v != DoorbellHalt {
		return false
	}
	c.ringing.Store(int32(idx) + 1)
	// The ringer never waits for the run: the chip works while the host
	// goes on, as on the hardware. What is done at once (arming the
	// queues, a small copy, the records of a run that found no wait)
	// costs the ringer no hand-off.
	c.doorbell.Ring(v, c, async, c.Wake)
	return true
}

// doorbellWork is a doorbell's work left for after a wait: the exec
// queues still moving, or an execution latency to sit out.
type doorbellWork struct {
	v       uint32    // DoorbellRun or DoorbellHalt
	busy    [][2]int  // the queues armExecQueues left moving
	started time.Time // when the doorbell was served
	woken   bool      // the engines heard of the increment before beginDoorbell
	later   bool      // a run that waited: the engines were told before it
}

// beginDoorbell serves one doorbell as far as it goes without waiting: it arms
// the exec queues and returns the work left when the rest has to wait
// (DMA still moving, an execution latency), or finishes it and returns
// nil. Unless woken, it tells the engines of the doorbell's increment:
// before a wait, or by running them (runPrograms).
func (c *Core) beginDoorbell(v uint32, woken bool) *doorbellWork {
	if v != DoorbellRun && !woken {
		c.Wake()
	}
	w := &doorbellWork{v: v, started: time.Now(), woken: woken}
	w.busy = c.armExecQueues() // a halt request is staged there too
	waits := len(w.busy) > 0
	if v == DoorbellRun {
		w.later = waits || c.cfg.execLatency > 0
		waits = w.later
		if w.later && !woken {
			c.Wake()
		}
	}
	if waits {
		return w
	}
	c.finishDoorbell(w)
	return nil
}

// finishDoorbell is the rest of a doorbell once its queues are done: a halt's
// INIT and HALT records, a run's staged programs or its semantic answer.
func (c *Core) finishDoorbell(w *doorbellWork) {
	c.waitExecQueues(w.busy)
	if w.v != DoorbellRun {
		c.notific.EmitInfer(dhal.RecordInit)
		c.notific.EmitInfer(dhal.RecordHalt)
		return
	}
	if c.runPrograms() {
		return // a delivered request: the engines answer (run.go)
	}
	if !w.woken && !w.later {
		c.Wake() // no engine runs, but the rule holds
	}
	c.semanticRun(w.started)
}

// semanticRun is a run without a staged program: START, the execution
// latency, END, counted as the driver counts a run.
func (c *Core) semanticRun(started time.Time) {
	c.notific.EmitInfer(dhal.RecordStart)
	if lat := c.cfg.execLatency; lat > 0 {
		time.Sleep(lat)
	}
	// Counted before END shows: the ringer may have returned long ago,
	// and whoever sees END must find the run counted.
	c.chip.count(c.nc, "other_info/inference_count", 1)
	// The core was busy for the run: utilisation tools read this, and
	// the firmware's power model counts it.
	busy := time.Since(started)
	c.chip.count(c.nc, "other_info/nc_time_in_use", uint64(max(busy.Microseconds(), 1)))
	c.chip.addBusy(busy / time.Duration(c.cfg.arch.CoresPerDevice)) // one core of many
	c.notific.EmitInfer(dhal.RecordEnd)
}

// armExecQueues arms the core's exec queue (execQueues) and returns the
// queues still moving data (engine, queue) after what the engines do
// inline.
func (c *Core) armExecQueues() [][2]int {
	armed := c.execQueues()
	busy := armed[:0]
	for _, key := range armed {
		e := c.chip.engine(key[0])
		if e == nil {
			continue
		}
		if tx, rx := e.Arm(key[1]); (tx == 0 && rx == 0) || e.Idle(key[1]) {
			continue // nothing staged, or a small copy already done inline
		}
		busy = append(busy, key)
	}
	return busy
}

// waitExecQueues waits for the queues armExecQueues left moving.
func (c *Core) waitExecQueues(busy [][2]int) {
	if len(busy) == 0 {
		return
	}
	lockrank.AssertUnlocked("exec queue wait")
	ctx, cancel := context.WithTimeout(context.Background(), execQueueWait)
	defer cancel()
	for _, key := range busy {
		if err := c.chip.engine(key[0]).WaitIdle(ctx, key[1]); err != nil {
			c.cfg.log.WithFields(logrus.Fields{"core": c.nc, "engine": key[0], "queue": key[1]}).Warn("exec queue did not finish")
		}
	}
}
