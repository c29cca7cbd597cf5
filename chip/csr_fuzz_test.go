package chip

import (
	"testing"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// FuzzCSRWrite sends arbitrary CTRL_WRs to a chip's register space:
// whatever the address, value and size, a write returns (it never waits
// for a copy) without a panic, and an address outside the register space
// is always refused.
func FuzzCSRWrite(f *testing.F) {
	c, _ := newTestChipDriver(f, "trn2.3xlarge")
	fa := c.arch
	tail := fa.CSRBase() + fa.UDMABase(3) + dhal.UDMAM2SQueues + dhal.UDMAQueueTailInc
	f.Add(tail, uint32(1), uint8(4))
	f.Add(tail+dhal.UDMAS2MQueues-dhal.UDMAM2SQueues, uint32(1<<31), uint8(4))
	f.Add(fa.CSRBase()+fa.MiscRAMBar0, uint32(7), uint8(4))
	f.Add(uint64(0x40), uint32(1), uint8(1))
	csr := c.Core(0)
	f.Fuzz(func(t *testing.T, addr uint64, v uint32, size uint8) {
		err := csr.WriteCSR(seq.PE, addr, v, size)
		if _, in := fa.CSROffset(addr); !in && err == nil {
			t.Fatalf("write to %#x outside the register space taken", addr)
		}
	})
}
