package chip

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/dhal"
)

// The chip's DMA address space and its engines.

// initSpace maps the physical memory as the engines reach it; the
// driver admits and accounts every write that reaches the backing.
func (c *Chip) initSpace() {
	f := c.arch
	c.mem = dma.NewSpace(c.phys.fd, engineWindows(f))
	c.mem.Touch = func(pa, n uint64) {
		c.pattern.fill(pa, n)
		c.drv.Touched(n)
	}
	c.mem.Admit = c.drv.Admit
	c.mem.HostLo, c.mem.HostHi = f.HostBase, f.HostBase+dhal.HostMemorySpan
	c.mem.HostOwner = func(pa uint64) *dma.Space {
		if o := c.drv.HostOwner(pa); o != nil {
			return o.mem
		}
		return nil
	}
}

// engineWindows is what a chip's engines reach: HBM, host memory under
// the route bit, the special resources (state buffers, semaphore areas)
// and the regions PROGRAM_ENGINE writes.
func engineWindows(f *dhal.ArchFacts) []dma.Range {
	var rs []dma.Range
	for _, b := range f.HBMBases {
		rs = append(rs, dma.Range{Base: b, Size: f.HBMSize})
	}
	rs = append(rs, dma.Range{Base: f.HostBase, Size: dhal.HostMemorySpan})
	for _, r := range f.MmapResources() {
		rs = append(rs, dma.Range{Base: r.Offset, Size: r.Size})
	}
	for _, r := range f.ProgramRegions() {
		rs = append(rs, dma.Range{Base: r.Base, Size: r.Size})
	}
	return rs
}

// initEngines builds the engines; the routes, sweeps and exec watch they
// report to are in place already.
func (c *Chip) initEngines() {
	f := c.arch
	faults := c.drv.Faults()
	opts := dma.Options{
		RingIDErrorsMasked: f.RingIDErrorsMasked,
		Fault:              faults.DMA,
		OnTransfer:         c.power.addBytes,
		OnCopy:             c.requests.copyObserver(c.cfg),
		Starved:            &c.starved,
		OnError: func(eng, qid int, status uint32) {
			c.log.WithFields(logrus.Fields{"engine": eng, "queue": qid, "status": status}).Warn("DMA queue aborted")
			c.reportDMAAbort(eng, qid, status)
		},
	}
	for i := range f.DMAEnginesPerDevice {
		c.engines = append(c.engines, dma.NewEngine(i, c.mem, opts))
	}
}

// stopEngines halts every engine and waits (briefly) for the workers.
func (c *Chip) stopEngines() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, e := range c.engines {
		e.SetState(dmadesc.StateDisable)
		for q := range dma.QueuesPerEngine {
			e.WaitIdle(ctx, q)
		}
		e.WaitPoller(ctx) // disabled, it returns within a poll
	}
}

// ResetEngines brings the core's DMA engines back in the normal state
// with every queue stopped and empty, whatever was queued on them (the DMA
// side of a core reset).
func (c *Core) ResetEngines() {
	c.chip.queueRoles().forget(c.engFirst, c.engEnd)
	for eng := c.engFirst; eng < c.engEnd; eng++ {
		e := c.chip.engine(eng)
		for q := range dma.QueuesPerEngine {
			e.DisableQueue(q)
		}
		e.SetState(dmadesc.StateNormal)
	}
}

// reportDMAAbort writes an error record for a queue that stopped on an
// error into its core's ERROR queue and counts it in sysfs.
func (c *Chip) reportDMAAbort(eng, qid int, status uint32) {
	core := c.Core(eng / c.arch.DMAEnginesPerCore)
	if core == nil {
		return // an h2t engine: no core of its own
	}
	core.notific.Emit(nq.ErrorSlot, nq.DMAAbortRecord(eng, qid, status))
	c.drv.Count(core.nc, "status/hw_dma_abort_error", 1)
}

// KickEngines restarts every queue that has work (after a fault cleared).
func (c *Chip) KickEngines() {
	for _, e := range c.engines {
		e.Kick()
	}
}
