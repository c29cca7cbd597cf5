package seq

import (
	"fmt"
	"sync/atomic"
)

// The on-chip memories a core's engines address: the state buffer (SBUF)
// and the matmul accumulators (PSUM), each 128 partitions at a fixed
// stride in the 29-bit ISA address space, of which only the first bytes
// of each stride are memory (docs/isa.md, "On-chip memory").

// Region is one of a core's on-chip memories.
type Region uint8

const (
	SBUF Region = iota
	PSUM
	numRegions
)

// Partitions is how many partitions each region has.
const Partitions = 128

// AddrMask keeps the 29 address bits of an ADDR4.
const AddrMask = 0x1FFFFFFF

// regionInfo places a region in the ISA address space.
type regionInfo struct {
	name   string
	base   uint32 // ISA address of partition 0
	stride uint32 // from one partition to the next
	active uint32 // memory at the start of each stride; 0: the core says (SBUF)
}

// regions are the ISA header's geometry constants (59909149245 §1): the
// SBUF's active bytes grow with the generation, so the core gives them.
var regions = [numRegions]regionInfo{
	SBUF: {name: "SBUF", base: 0, stride: 0x40000},
	PSUM: {name: "PSUM", base: 0x2000000, stride: 0x8000, active: 0x4000},
}

func (g Region) String() string {
	if g < numRegions {
		return regions[g].name
	}
	return fmt.Sprintf("region%d", uint8(g))
}

// Stride is the distance between two partitions of g.
func (g Region) Stride() uint32 { return regions[g].stride }

// Locate splits an ISA address into its region, partition and byte
// offset inside the partition's stride; false if no region holds it.
func Locate(a uint32) (g Region, p int, off uint32, ok bool) {
	for g := range numRegions {
		r := regions[g]
		if a >= r.base && a-r.base < Partitions*r.stride {
			d := a - r.base
			return g, int(d / r.stride), d % r.stride, true
		}
	}
	return 0, 0, 0, false
}

// Addr is the ISA address of byte off of partition p of g.
func Addr(g Region, p int, off uint32) uint32 {
	return regions[g].base + uint32(p)*regions[g].stride + off
}

// OnChip is a core's on-chip memory as its engines reach it. Active is
// how many bytes at the start of each partition of g are memory.
// Partition returns bytes [lo, hi) of partition p of g (hi <= Active),
// which the engine reads or (write) writes while the record runs: only
// those count as accessed. An error stops the engine (a write the host's
// memory limit refuses). Engines of one core call it from their
// goroutines at once: their programs order their accesses with
// semaphores, as on the hardware.
type OnChip interface {
	Active(g Region) uint32
	Partition(g Region, p int, lo, hi uint32, write bool) ([]byte, error)
}

// OnChipMemory is an OnChip held in the daemon's own memory, each partition
// allocated when first reached: a core whose engines never touch it
// costs 2 KiB of pointers. The chip keeps PSUM here (it has no window
// in the device's address space); tests keep both.
type OnChipMemory struct {
	sbufActive uint32
	parts      [numRegions][Partitions]atomic.Pointer[[]byte]
}

// NewOnChipMemory returns an empty memory whose SBUF partitions hold
// sbufActive bytes.
func NewOnChipMemory(sbufActive uint32) *OnChipMemory {
	return &OnChipMemory{sbufActive: min(sbufActive, regions[SBUF].stride)}
}

// Active implements OnChip.
func (m *OnChipMemory) Active(g Region) uint32 {
	switch {
	case g >= numRegions:
		return 0
	case g == SBUF:
		return m.sbufActive
	}
	return regions[g].active
}

// Partition implements OnChip.
func (m *OnChipMemory) Partition(g Region, p int, lo, hi uint32, write bool) ([]byte, error) {
	if g >= numRegions || p < 0 || p >= Partitions || lo > hi || hi > m.Active(g) {
		return nil, fmt.Errorf("%w: %v partition %d bytes %d..%d", ErrAperture, g, p, lo, hi)
	}
	slot := &m.parts[g][p]
	b := slot.Load()
	for b == nil { // first reached; a loser of the race uses the winner's
		nb := make([]byte, m.Active(g))
		if b = &nb; !slot.CompareAndSwap(nil, b) {
			b = slot.Load()
		}
	}
	return (*b)[lo:hi:hi], nil
}

// Reset forgets region g's contents (a core reset): it reads as zeros
// again. An engine still running keeps the partitions it holds.
func (m *OnChipMemory) Reset(g Region) {
	for p := range m.parts[g] {
		m.parts[g][p].Store(nil)
	}
}

// Touched reports how many partitions of g hold memory.
func (m *OnChipMemory) Touched(g Region) int {
	n := 0
	for p := range m.parts[g] {
		if m.parts[g][p].Load() != nil {
			n++
		}
	}
	return n
}
