package chip

import (
	"fmt"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dma"
)

// What a core's sequencers see of the device: its memory, where they
// fetch records, and its semaphore and event area, which the ioctls,
// BAR0, DMA and mapped stores reach too.

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
func (c *Chip) seqProgram(addr uint64) seq.Program {
	p := seq.Program{Mem: devMemory{c.mem}, Start: addr, Lo: addr, Hi: addr}
	if base, size, ok := c.drv.Allocation(addr); ok {
		p.Lo, p.Hi = base, base+size
	}
	return p
}

// areaSync is a core's semaphores and events as its engines use them.
// Its updates come from a program: they wake the core's engines but never
// ring the host doorbell. The core's own engines never wait on Changed
// (they park, execsched.go); it serves a sequencer run by Run. Each engine
// has its own areaSync, used by whoever runs or checks that engine; all
// of a core's are over the one state of the core (coreArea).
type areaSync struct {
	a  Area
	c  *Chip
	nc int
	// held: the core checks the engine's wait under its lock, so a change
	// the check makes (an event it takes) is only noted (due), and woken
	// once the lock is released.
	held, due bool
}

// coreSync returns an engine's view of core nc's semaphores and events
// (nc < MaxCores).
func (c *Chip) coreSync(nc int) *areaSync {
	return &areaSync{a: c.coreArea(nc), c: c, nc: nc}
}

// coreArea is core nc's semaphores and events as its engines see them:
// the core's area, or, if its window cannot be mapped, one spare area of
// the core's that the host's stores do not reach. Either way the core's
// engines share one state, as on the hardware, and every update wakes
// the core (WakeCore).
func (c *Chip) coreArea(nc int) Area {
	if a, ok := c.SemArea(nc); ok {
		return a
	}
	cr := &c.progs.cores[nc]
	cr.spareOnce.Do(func() { cr.spare = make(Area, AreaSize) })
	return cr.spare
}

var semWindowOp = map[seq.SemOp]Op{seq.SemAdd: Inc, seq.SemSub: Dec, seq.SemSet: Set}

func (s *areaSync) Semaphore(idx uint8) uint32 { return s.a.Semaphore(int(idx)) }
func (s *areaSync) Event(idx uint8) bool       { return s.a.Event(int(idx)) != 0 }
func (s *areaSync) Changed() <-chan struct{}   { return s.c.progs.cores[s.nc].wake.Changed() }

func (s *areaSync) UpdateSemaphore(idx uint8, op seq.SemOp, v uint32) {
	s.a.Apply(ReadWindow+4*uint64(idx), semWindowOp[op], v)
	s.changed()
}

func (s *areaSync) SetEvent(idx uint8, state bool) {
	s.a.SetEvent(int(idx), b2u32(state))
	s.changed()
}

func (s *areaSync) CompareAndSetEvent(idx uint8, old, new bool) bool {
	if !s.a.SwapEvent(int(idx), old, b2u32(new)) {
		return false
	}
	if old != new {
		s.changed()
	}
	return true
}

// changed wakes the core's engines after a change, or notes it when the
// core holds its lock.
func (s *areaSync) changed() {
	if s.held {
		s.due = true
		return
	}
	s.c.WakeCore(s.nc)
}

func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
