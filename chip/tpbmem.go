package chip

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
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
// so a run never straddles the state buffer's alias boundary. Each part
// reaches the memory where it lives: the SBUF resource's offset for the
// state buffer (where the SoC window's alias leads), the SoC address
// for the rest.
func (c *Chip) tpbMemory() []mmio.Backed {
	f := c.arch
	var out []mmio.Backed
	for nc := range f.CoresPerDevice {
		bar, soc := f.TPBBase(nc), f.TPBSoCBase(nc)
		if bar == dhal.InvalidOffset || soc == dhal.InvalidOffset {
			continue
		}
		sbuf := soc
		if res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSBUF); ok && res.Size >= dhal.TPBSBUFSize {
			sbuf = res.Offset
		}
		out = append(out,
			mmio.Backed{Name: fmt.Sprintf("nc%d-tpb-sbuf", nc), Base: bar, Size: dhal.TPBSBUFSize, Bytes: c.physBytes(sbuf)},
			mmio.Backed{Name: fmt.Sprintf("nc%d-tpb-ram", nc), Base: bar + dhal.TPBSBUFSize, Size: dhal.TPBWindowSize - dhal.TPBSBUFSize, Bytes: c.physBytes(soc + dhal.TPBSBUFSize)})
	}
	return out
}

// physBytes reaches device memory from physical address base on. A
// write is admitted by the host's memory limit first, as an engine's
// is. A read goes through the file (pread), not the mapping: reading a
// never-written word must not allocate the page, or BAR_READs could
// grow the backing past the limit that admits writes.
func (c *Chip) physBytes(base uint64) func(off, n uint64, write bool) ([]byte, error) {
	return func(off, n uint64, write bool) ([]byte, error) {
		pa := base + off
		if write {
			if b, ok := c.mem.SliceWrite(pa, n); ok {
				return b, nil
			}
			return nil, fmt.Errorf("device memory %#x+%#x: refused by the host's memory limit or not mapped", pa, n)
		}
		b := make([]byte, n)
		if _, err := unix.Pread(c.phys.fd, b, int64(pa)); err != nil {
			return nil, fmt.Errorf("read device memory %#x+%#x: %w", pa, n, err)
		}
		return b, nil
	}
}
