package chip

import (
	"fmt"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/mmio"
)

// The TPB windows in BAR0 are memory: the state buffer and every engine
// RAM behind it (the NX sequencers' and Q7 cores' IRAM and DRAM, which
// the runtime installs microcode into word by word over BAR_WRITE, wiki
// 59944145351) are the bytes of the device's physical space at the
// core's TPB SoC address. A DMA naming that address, a mapping of the
// SBUF resource and an engine's SBUF access all see what BAR_WRITE
// stored, and BAR_READ sees theirs; the space resolves the SoC-to-
// resource aliases (route.go). Blocks with behaviour (the semaphore
// window) sit over this memory in BAR0. Memory costs what is written:
// the space is a sparse file, admitted against the host's memory limit.

// tpbMemory is the BAR0 memory of every core's TPB window, in two parts
// so a run never straddles the state buffer's alias boundary.
func (c *Chip) tpbMemory() []mmio.Backed {
	f := c.arch
	var out []mmio.Backed
	for nc := range f.CoresPerDevice {
		bar, soc := f.TPBBase(nc), f.TPBSoCBase(nc)
		if bar == dhal.InvalidOffset || soc == dhal.InvalidOffset {
			continue
		}
		for _, part := range []struct {
			name     string
			off, len uint64
		}{
			{"sbuf", 0, dhal.TPBSBUFSize},
			{"ram", dhal.TPBSBUFSize, dhal.TPBWindowSize - dhal.TPBSBUFSize},
		} {
			out = append(out, mmio.Backed{
				Name: fmt.Sprintf("nc%d-tpb-%s", nc, part.name),
				Base: bar + part.off, Size: part.len,
				Bytes: c.socBytes(soc + part.off),
			})
		}
	}
	return out
}

// socBytes reaches device memory from SoC address base on, as an engine
// does: a write is admitted by the host's memory limit first.
func (c *Chip) socBytes(base uint64) func(off, n uint64, write bool) ([]byte, error) {
	return func(off, n uint64, write bool) ([]byte, error) {
		pa := base + off
		if write {
			if b, ok := c.mem.SliceWrite(pa, n); ok {
				return b, nil
			}
			return nil, fmt.Errorf("device memory %#x+%#x: refused by the host's memory limit or not mapped", pa, n)
		}
		if b, ok := c.mem.Slice(pa, n); ok {
			return b, nil
		}
		return nil, fmt.Errorf("device memory %#x+%#x: not mapped", pa, n)
	}
}
