package chip

import (
	"fmt"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/dma"
)

// coreCSR is the register space as core nc's engines write it (CTRL_WR):
// a write to a DMA queue's tail-increment register makes that many more
// descriptors available and starts the queue on its own worker; any other
// register of the space takes the write and does nothing (the emulation
// models no other effect a program may trigger); an address outside the
// space faults the writing engine, as a write no slave answers would.
type coreCSR struct {
	c  *Chip
	nc int
}

// coreCSR returns core nc's register space for its sequencers.
func (c *Chip) coreCSR(nc int) seq.CSR { return coreCSR{c, nc} }

func (s coreCSR) WriteCSR(_ seq.Engine, addr uint64, v uint32, size uint8) error {
	f := s.c.arch
	off, ok := f.CSROffset(addr)
	if !ok {
		return fmt.Errorf("core %d: no register at device address %#x (register space %#x+%#x)", s.nc, addr, f.CSRBase(), f.BAR0Size)
	}
	eng, qid, s2m, reg, ok := f.UDMAQueueRegister(off)
	if !ok || reg != dhal.UDMAQueueTailInc {
		return nil
	}
	e := s.c.Engine(eng)
	if e == nil {
		return nil
	}
	if size != 4 {
		return fmt.Errorf("a %d-byte write to DMA engine %d queue %d's 32-bit tail increment", size, eng, qid)
	}
	d := dma.TX
	if s2m {
		d = dma.RX
	}
	// The engine's worker moves the data: the sequencer goes on at once,
	// and a copy that raises one of this core's semaphores releases it
	// later, as on the hardware.
	if !e.TailIncrement(qid, d, v) {
		return fmt.Errorf("DMA engine %d queue %d: tail increment %d exceeds the ring", eng, qid, v)
	}
	return nil
}

// NameCSR implements seq.CSRNamer: a DMA queue's tail-increment register
// is named after the queue's trace track ("dma 3 q2 tx tail").
func (s coreCSR) NameCSR(addr uint64) string {
	f := s.c.arch
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
