package chip

import (
	"slices"

	"github.com/neuronfs/neuronfs/chip/dma"
)

// Which queues a doorbell starts, and which increment is the doorbell.
//
// A doorbell starts the core's exec queue: the device-driven queue (one a
// process initialised and never rang itself) on which the runtime stages
// the request and its trigger descriptors. Which queue that is the wiki
// does not say (exec-protocol GAP), so the core learns it: the queue a
// request was last delivered from; before any, the queues whose staged
// descriptors hold a request (a 52-byte copy, then a 4-byte copy into
// this core's event window); with no request staged anywhere, every
// device-driven queue no increment feeds (a plain staged copy, the
// semantic path). The other queues start one increment at a time, by
// the trigger descriptors and the programs' CTRL_WR (tailinc.go).
//
// With --inference-start=-1 (the id lives only in the runtime's binary)
// the doorbell semaphore is learned too: the semaphore whose increment
// delivered the first request. Until then any increment by 1 or 2 rings;
// from then on an increment of another semaphore is the runtime's own
// use of it and starts nothing, writing no START/END. A core reset
// forgets both. docs/bringup.md has the rule and its risk.

// requestScan bounds the staged descriptors a doorbell looks through for
// a request (the IO-queue switch pairs come first).
const requestScan = 64

// execQueues returns the queues a doorbell starts (engine, queue). It
// filters the driver's fresh list in place: a doorbell allocates no more
// than the list.
func (c *Core) execQueues() [][2]int {
	all := c.chip.deviceDrivenQueues(c.nc)
	if k := c.execQueue.Load(); k > 0 {
		key := [2]int{int(k-1) / dma.QueuesPerEngine, int(k-1) % dma.QueuesPerEngine}
		if slices.Contains(all, key) {
			all[0] = key
			return all[:1]
		}
	}
	roles := c.chip.queueRoles()
	cand := slices.DeleteFunc(all, func(key [2]int) bool { return roles.isFed(key[0], key[1]) })
	if len(cand) <= 1 {
		return cand
	}
	var req [][2]int
	for _, key := range cand {
		if c.holdsRequest(key) {
			req = append(req, key)
		}
	}
	if len(req) > 0 {
		return req
	}
	return cand
}

// holdsRequest reports whether the descriptors staged on key hold a
// request for this core.
func (c *Core) holdsRequest(key [2]int) bool {
	e := c.chip.engine(key[0])
	if e == nil {
		return false
	}
	tx, rx := e.Staged(key[1], requestScan)
	for i := 0; i+1 < min(len(tx), len(rx)); i++ {
		if tx[i].Len() == execRequestSize && tx[i+1].Len() == execPokeSize && c.poked(rx[i+1].Addr, execPokeSize) {
			return true
		}
	}
	return false
}

// learnExecQueue notes the queue a request for this core came from.
func (c *Core) learnExecQueue(eng, qid int) {
	c.execQueue.Store(int32(eng*dma.QueuesPerEngine + qid + 1))
}

// doorbellSem is the semaphore whose increment rings the doorbell: the
// configured one, else the learned one; -1: any.
func (c *Core) doorbellSem() int {
	if s := c.cfg.inferenceStart; s >= 0 {
		return s
	}
	return int(c.startSem.Load()) - 1
}

// learnDoorbell takes the semaphore that rang the doorbell serving a
// delivered request as the core's doorbell, if none is known yet.
func (c *Core) learnDoorbell() {
	if r := c.ringing.Load(); r > 0 {
		c.startSem.CompareAndSwap(0, r)
	}
}

// forgetQueues forgets what the core learned (core reset).
func (c *Core) forgetQueues() {
	c.execQueue.Store(0)
	c.startSem.Store(0)
	c.ringing.Store(0)
}
