package chip

import (
	"encoding/binary"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

// A BAR0 store into any core's TPB window is the device's memory: the
// mapped SBUF resource and a DMA at the SoC address read it, and a store
// there reads back through BAR0. The semaphore window keeps its
// behaviour over that memory. Before, the window was a register map
// apart from the memory both other views reach.
func TestTPBWindowIsDeviceMemory(t *testing.T) {
	for _, inst := range []string{"trn1.32xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			c := newTestChip(t, inst)
			f, bar, mem := c.arch, c.BAR0(), c.Mem()
			for nc := range f.CoresPerDevice {
				base, soc := f.TPBBase(nc), f.TPBSoCBase(nc)
				res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSBUF)
				if !ok {
					t.Fatalf("core %d has no SBUF resource", nc)
				}
				want := 0x5b000000 | uint32(nc)
				if err := bar.Write32(base+0x40, want); err != nil {
					t.Fatal(err)
				}
				mapped, ok1 := mem.Local(res.Offset+0x40, 4)
				dmaView, ok2 := mem.Slice(soc+0x40, 4)
				if !ok1 || !ok2 || binary.LittleEndian.Uint32(mapped) != want || binary.LittleEndian.Uint32(dmaView) != want {
					t.Fatalf("core %d: BAR0 SBUF store %#x not seen by the mapped SBUF or a DMA", nc, want)
				}
				dram := f.Q7Pool().DRAMOffset(nc) // Q7 core nc's ready word
				b, ok := mem.SliceWrite(soc+dram, 4)
				if !ok {
					t.Fatalf("core %d: no memory at SoC %#x", nc, soc+dram)
				}
				binary.LittleEndian.PutUint32(b, 0x6099cb34)
				if got := bar.Read32(base + dram); got != 0x6099cb34 {
					t.Fatalf("core %d: BAR0 reads %#x of Q7 RAM a DMA wrote 0x6099cb34 to", nc, got)
				}
				bar.Write32(base+dhal.TPBSemSetOffset+4*3, 9)
				if got := bar.Read32(base + dhal.TPBSemReadOffset + 4*3); got != 9 {
					t.Fatalf("core %d: semaphore 3 reads %d after a set to 9", nc, got)
				}
			}
			if words, pages := bar.Plain(); words != 0 {
				t.Fatalf("TPB stores left %d plain words (%v)", words, pages)
			}
		})
	}
}

// Reading never-written TPB words costs no memory: only writes, which the
// host's memory limit admits, grow the backing.
func TestTPBReadsAllocateNothing(t *testing.T) {
	c := newTestChip(t, "trn2.48xlarge")
	f, bar := c.arch, c.BAR0()
	before, err := c.phys.resident()
	if err != nil {
		t.Fatal(err)
	}
	for nc := range f.CoresPerDevice {
		for p := uint64(0); p < dhal.TPBWindowSize; p += 0x10000 {
			if v := bar.Read32(f.TPBBase(nc) + p); v != 0 && (p < dhal.TPBEventsOffset || p >= dhal.TPBEventsOffset+dhal.TPBSemaphoreArea) {
				t.Fatalf("core %d: unwritten word %#x reads %#x", nc, p, v)
			}
		}
	}
	after, err := c.phys.resident()
	if err != nil {
		t.Fatal(err)
	}
	if after > before+64<<10 {
		t.Fatalf("reading 8 × 1024 unwritten TPB pages grew the backing from %d to %d bytes", before, after)
	}
}
