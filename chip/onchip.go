package chip

import (
	"fmt"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// The cores' on-chip memory as their engines compute on it
// (TENSOR_SCALAR_ARITH). A core's SBUF is its SBUF mmap resource in the
// device's memory, partition p at p × 256 KiB (docs/isa.md): what an
// engine writes there a DMA descriptor or a mapping of the resource
// reads, and back. PSUM has no window in the device's address space, so
// it lives in the daemon, each partition allocated when first reached,
// and a core reset clears it. Neither costs anything until an engine
// computes.

// coreOnChip is a core's on-chip memory.
type coreOnChip struct {
	c      *Core
	sbuf   uint64 // device address of the SBUF resource
	hasBuf bool
	psum   *seq.OnChipMemory
}

// newCoreOnChip gives core c its on-chip memory.
func newCoreOnChip(c *Core) *coreOnChip {
	f := c.cfg.arch
	m := &coreOnChip{c: c, psum: seq.NewOnChipMemory(f.SBUFPartitionBytes)}
	if res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(c.nc), dhal.ResourceSBUF); ok && res.Size >= seq.Partitions*uint64(seq.SBUF.Stride()) {
		m.sbuf, m.hasBuf = res.Offset, true
	}
	return m
}

// Active implements seq.OnChip.
func (m *coreOnChip) Active(g seq.Region) uint32 {
	if g != seq.SBUF || !m.hasBuf {
		return m.psum.Active(g)
	}
	return m.c.cfg.arch.SBUFPartitionBytes
}

// Partition implements seq.OnChip: an SBUF access admits and reports
// (Touched) only the bytes it asks for.
func (m *coreOnChip) Partition(g seq.Region, p int, lo, hi uint32, write bool) ([]byte, error) {
	if g != seq.SBUF || !m.hasBuf {
		return m.psum.Partition(g, p, lo, hi, write)
	}
	if p < 0 || p >= seq.Partitions || lo > hi || hi > m.Active(g) {
		return nil, fmt.Errorf("%w: SBUF partition %d bytes %d..%d", seq.ErrAperture, p, lo, hi)
	}
	pa, n := m.sbuf+uint64(p)*uint64(g.Stride())+uint64(lo), uint64(hi-lo)
	mem := m.c.chip.mem()
	if write && mem.Admit != nil && !mem.Admit(pa, n) {
		return nil, fmt.Errorf("core %d SBUF partition %d: the host's memory limit refuses the write", m.c.nc, p)
	}
	b, ok := mem.Local(pa, n)
	if !ok {
		return nil, fmt.Errorf("core %d SBUF partition %d: no memory at %#x", m.c.nc, p, pa)
	}
	return b, nil
}
