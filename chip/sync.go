package chip

import (
	"fmt"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// What a core's sequencers see of the device: its memory, where they
// fetch records; the core's semaphore and event area, which the ioctls,
// BAR0, DMA and mapped stores reach too (the Core is their seq.Sync); and
// the register space they write (the Core is their seq.CSR).

var (
	_ seq.Sync     = (*Core)(nil)
	_ seq.CSR      = (*Core)(nil)
	_ seq.CSRNamer = (*Core)(nil)
)

// devMemory is the device's memory as an engine fetches from it: through
// the same decoder as its DMA engines (aliases, host memory).
type devMemory struct{ m *dma.Space }

func (m devMemory) Fetch(addr uint64, r *seq.Record) error {
	b, ok := m.m.Slice(addr, seq.RecordSize)
	if !ok {
		return fmt.Errorf("no memory at %#x", addr)
	}
	copy(r[:], b)
	return nil
}

// seqProgram is an engine's run from addr: it may fetch and branch
// anywhere in the allocation holding addr (its image); an address no
// allocation holds faults at the first fetch.
func (c *Core) seqProgram(addr uint64) seq.Program {
	p := seq.Program{Mem: devMemory{c.chip.mem()}, Start: addr, Lo: addr, Hi: addr}
	if base, size, ok := c.chip.allocation(addr); ok {
		p.Lo, p.Hi = base, base+size
	}
	return p
}

// engineArea is the core's semaphores and events as its engines see
// them: the core's area, or, if its window cannot be mapped, one spare
// area of the core's that the host's stores do not reach. Either way the
// core's engines share one state, as on the hardware, and every update
// wakes the core. Resolved once, at the engines' first use: a lookup
// counts as a touch of the whole area.
func (c *Core) engineArea() Area {
	cr := &c.runs
	cr.areaOnce.Do(func() {
		if a, ok := c.Area(); ok {
			cr.area = a
			return
		}
		cr.area = make(Area, AreaSize)
	})
	return cr.area
}

var semWindowOp = map[seq.SemOp]Op{seq.SemAdd: Inc, seq.SemSub: Dec, seq.SemSet: Set}

// Semaphore, Event, UpdateSemaphore, SetEvent, CompareAndSetEvent and
// Changed are the core's seq.Sync. Updates come from a program: they wake
// the core's engines but never ring the host doorbell. The core's own
// engines never wait on Changed (they park, sched.go); it serves a
// sequencer run by Run.
func (c *Core) Semaphore(idx uint8) uint32 { return c.engineArea().Semaphore(int(idx)) }
func (c *Core) Event(idx uint8) bool       { return c.engineArea().Event(int(idx)) != 0 }
func (c *Core) Changed() <-chan struct{}   { return c.runs.wake.Changed() }

func (c *Core) UpdateSemaphore(idx uint8, op seq.SemOp, v uint32) {
	c.engineArea().Apply(ReadWindow+4*uint64(idx), semWindowOp[op], v)
	c.changed()
}

func (c *Core) SetEvent(idx uint8, state bool) {
	c.engineArea().SetEvent(int(idx), b2u32(state))
	c.changed()
}

func (c *Core) CompareAndSetEvent(idx uint8, old, new bool) bool {
	if !c.engineArea().SwapEvent(int(idx), old, b2u32(new)) {
		return false
	}
	if old != new {
		c.changed()
	}
	return true
}

// changed wakes the core's engines after a change. While the core checks
// a parked engine's wait under its lock (ready), the change is only noted
// and the checker wakes the core once the lock is released: noted, then
// checking read again, so a checker that already finished (and looked
// for a note) leaves the wake to this caller.
func (c *Core) changed() {
	cr := &c.runs
	if cr.checking.Load() {
		cr.due.Store(true)
		if cr.checking.Load() {
			return
		}
	}
	c.Wake()
}

func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// WriteCSR is the register space as the core's engines write it
// (CTRL_WR): a write to a DMA queue's tail-increment register makes that
// many more descriptors available and starts the queue on its own worker;
// any other register of the space takes the write and does nothing (the
// emulation models no other effect a program may trigger); an address
// outside the space faults the writing engine, as a write no slave
// answers would.
func (c *Core) WriteCSR(e seq.Engine, addr uint64, v uint32, size uint8) error {
	_, err := c.writeCSR(e, addr, v, size)
	return err
}

// writeCSR is WriteCSR; kicked reports a write into a known actor (a Q7
// core, a TOP_SP: actors.go), which a run's hang watcher must see.
func (c *Core) writeCSR(e seq.Engine, addr uint64, v uint32, size uint8) (kicked bool, err error) {
	f := c.cfg.arch
	off, ok := f.CSROffset(addr)
	if !ok {
		return false, fmt.Errorf("core %d: no register at device address %#x (register space %#x+%#x)", c.nc, addr, f.CSRBase(), f.BAR0Size)
	}
	eng, qid, s2m, reg, ok := f.UDMAQueueRegister(off)
	if !ok || reg != dhal.UDMAQueueTailInc || c.chip.engine(eng) == nil {
		if !ok {
			kicked = c.noteIgnoredWrite(e, addr, off) // a UDMA block's registers are the DMA's
		}
		return kicked, nil
	}
	if size != 4 {
		return false, fmt.Errorf("a %d-byte write to DMA engine %d queue %d's 32-bit tail increment", size, eng, qid)
	}
	d := dma.TX
	if s2m {
		d = dma.RX
	}
	// The engine's worker moves the data: the sequencer goes on at once,
	// and a copy that raises one of this core's semaphores releases it
	// later, as on the hardware.
	return false, c.chip.tailIncrement(eng, qid, d, v)
}

// runCSR is the register space as one run's engines write it: their
// first write into a known actor starts the run's hang watcher
// (hangend.go), so a run that kicks none pays for no watcher.
type runCSR struct {
	c *Core
	r *seqRun
}

var _ seq.CSRNamer = (*runCSR)(nil)

func (w *runCSR) WriteCSR(e seq.Engine, addr uint64, v uint32, size uint8) error {
	kicked, err := w.c.writeCSR(e, addr, v, size)
	if kicked {
		w.c.armHang(w.r)
	}
	return err
}

func (w *runCSR) NameCSR(addr uint64) string { return w.c.NameCSR(addr) }

// NameCSR implements seq.CSRNamer: a DMA queue's tail-increment register
// is named after the queue's trace track ("dma 3 q2 tx tail").
func (c *Core) NameCSR(addr uint64) string {
	f := c.cfg.arch
	off, ok := f.CSROffset(addr)
	if !ok {
		return ""
	}
	eng, qid, s2m, reg, ok := f.UDMAQueueRegister(off)
	if !ok || reg != dhal.UDMAQueueTailInc {
		return ""
	}
	side := "tx"
	if s2m {
		side = "rx"
	}
	return fmt.Sprintf("dma %d q%d %s tail", eng, qid, side)
}
