package chip

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/nq"
)

// The exec doorbell. An increment of a core's inference-start semaphore
// (by ioctl, BAR0 write, mapped store or DMA) wakes the core's engines as
// the runtime's programs would: the chip runs what was staged on the
// core's device-driven DMA queues (the exec queue), then every compute
// engine reports START and END in its INFER_STATUS queue (NOTIFIC slots
// 4-8). When the exec queue delivered a request naming the engines'
// images, the engines run those programs instead (execrun.go). Value 2
// after the runtime queued a halt request stops the idle program: each
// engine reports INIT then HALT and the core ignores doorbells until it
// is reset.

// execQueueWait bounds how long a run waits for staged DMA.
const execQueueWait = 10 * time.Second

// onSemIncrement runs after a semaphore of core nc went up by v: an
// increment of the inference-start semaphore by 1 or 2 rings the core's
// doorbell (Doorbell) and reports true; the doorbell then wakes the
// core's engines (WakeCore), or runs those the increment released. An
// async doorbell is served in a goroutine (an engine's write must not run
// the core's program in its worker).
func (c *Chip) onSemIncrement(nc int, idx uint32, v uint32, async bool) bool {
	start := c.cfg.InferenceStart
	if start >= 0 && idx != uint32(start) {
		return false
	}
	if (v != DoorbellRun && v != DoorbellHalt) || nc >= len(c.coreNQ) {
		return false
	}
	// The ringer never waits for the run: the chip works while the host
	// goes on, as on the hardware. What is done at once (arming the
	// queues, a small copy, the records of a run that found no wait)
	// costs the ringer no hand-off.
	c.exec[nc].Ring(v, func(v uint32, woken bool) func() {
		if v == DoorbellRun {
			return c.runInference(nc, woken)
		}
		if !woken {
			c.WakeCore(nc)
		}
		return c.runHalt(nc)
	}, async, func() { c.WakeCore(nc) })
	return true
}

// runInference serves one doorbell of core nc: it arms the exec queues
// and returns the rest of the run when that has to wait (DMA still
// moving, an execution latency), or finishes the run and returns nil.
// Unless woken, it tells the core's engines of the doorbell's increment:
// before a wait, or by running them (runPrograms).
func (c *Chip) runInference(nc int, woken bool) func() {
	started := time.Now()
	busy := c.armExecQueues(nc)
	later := len(busy) > 0 || c.cfg.ExecLatency > 0
	if later && !woken {
		c.WakeCore(nc)
	}
	finish := func() {
		c.waitExecQueues(nc, busy)
		if c.runPrograms(nc) {
			return // a delivered request: the engines answer (execrun.go)
		}
		if !woken && !later {
			c.WakeCore(nc) // no engine runs, but the rule holds
		}
		notific := c.coreNQ[nc]
		notific.EmitInfer(dhal.RecordStart)
		if lat := c.cfg.ExecLatency; lat > 0 {
			time.Sleep(lat)
		}
		// Counted before END shows: the ringer may have returned long ago,
		// and whoever sees END must find the run counted.
		c.drv.Count(nc, "other_info/inference_count", 1)
		// The core was busy for the run: utilisation tools read this, and
		// the firmware's power model counts it.
		busy := time.Since(started)
		c.drv.Count(nc, "other_info/nc_time_in_use", uint64(max(busy.Microseconds(), 1)))
		c.power.addBusy(busy / time.Duration(c.arch.CoresPerDevice)) // one core of many
		notific.EmitInfer(dhal.RecordEnd)
	}
	if later {
		return finish
	}
	finish()
	return nil
}

// runHalt stops core nc's idle program, as runInference runs one.
func (c *Chip) runHalt(nc int) func() {
	busy := c.armExecQueues(nc) // the halt request itself is staged there
	finish := func() {
		c.waitExecQueues(nc, busy)
		c.coreNQ[nc].EmitInfer(dhal.RecordInit)
		c.coreNQ[nc].EmitInfer(dhal.RecordHalt)
	}
	if len(busy) > 0 {
		return finish
	}
	finish()
	return nil
}

// armExecQueues arms the device-driven queues of core nc's engines (those
// a process initialised and never rang with DMA_QUEUE_COPY_START, as the
// driver tells) and returns those still moving data (engine, queue) after
// what the engines do inline.
func (c *Chip) armExecQueues(nc int) [][2]int {
	armed := c.drv.DeviceDrivenQueues(nc)
	busy := armed[:0]
	for _, key := range armed {
		e := c.Engine(key[0])
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
func (c *Chip) waitExecQueues(nc int, busy [][2]int) {
	if len(busy) == 0 {
		return
	}
	lockrank.AssertUnlocked("exec queue wait")
	ctx, cancel := context.WithTimeout(context.Background(), execQueueWait)
	defer cancel()
	for _, key := range busy {
		if err := c.engines[key[0]].WaitIdle(ctx, key[1]); err != nil {
			c.log.WithFields(logrus.Fields{"core": nc, "engine": key[0], "queue": key[1]}).Warn("exec queue did not finish")
		}
	}
}

// ResetExec clears core nc's execution state (core reset): doorbells not
// yet served are dropped, a halt is forgotten, the staged programs are
// cancelled without waiting, so it may run under the driver's lock, and
// PSUM is cleared.
func (c *Chip) ResetExec(nc int) {
	if nc >= len(c.exec) {
		return
	}
	c.exec[nc].Reset()
	c.cancelPrograms(nc)
	c.resetOnChip(nc)
}

// reportDMAAbort writes an error record for a queue that stopped on an
// error into its core's ERROR queue and counts it in sysfs.
func (c *Chip) reportDMAAbort(eng, qid int, status uint32) {
	f := c.arch
	nc := eng / f.DMAEnginesPerCore
	if nc >= len(c.coreNQ) {
		return // an h2t engine: no core of its own
	}
	c.coreNQ[nc].Emit(nq.ErrorSlot, nq.DMAAbortRecord(eng, qid, status))
	c.drv.Count(nc, "status/hw_dma_abort_error", 1)
}
