// Package mmio is the register side of an emulated Neuron device: a BAR0
// register file made of blocks with behaviour (the firmware mailbox, DMA
// engines, semaphores) over plain registers that keep what is written,
// and the emulated management firmware behind the FW-IO mailbox.
package mmio

import (
	"fmt"
	"sort"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Block gives registers behaviour. Offsets are relative to the block. A
// block declines an offset (ok false) to leave it a plain register.
type Block interface {
	Read32(off uint64) (v uint32, ok bool)
	Write32(off uint64, v uint32) (ok bool)
}

// Region places a block in the BAR.
type Region struct {
	Name       string
	Base, Size uint64
	Block      Block
}

// maxPlain bounds the plain registers a BAR remembers, so writes to
// millions of distinct addresses cannot grow the daemon without limit;
// beyond it, writes to registers never written before are dropped.
const maxPlain = 1 << 18

// BAR is one device's BAR0.
type BAR struct {
	size    uint64
	regions []Region // sorted by base, disjoint

	mu    lockrank.Mutex[lockrank.Registers]
	plain map[uint64]uint32
}

// NewBAR builds a BAR of size bytes with the given blocks.
func NewBAR(size uint64, regions []Region) (*BAR, error) {
	rs := append([]Region(nil), regions...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Base < rs[j].Base })
	for i, r := range rs {
		if r.Size == 0 || r.Base+r.Size > size || r.Base+r.Size < r.Base {
			return nil, fmt.Errorf("mmio: region %s %#x+%#x outside a %#x-byte BAR", r.Name, r.Base, r.Size, size)
		}
		if i > 0 && rs[i-1].Base+rs[i-1].Size > r.Base {
			return nil, fmt.Errorf("mmio: regions %s and %s overlap", rs[i-1].Name, r.Name)
		}
	}
	return &BAR{size: size, regions: rs, plain: map[uint64]uint32{}}, nil
}

// Size is the BAR's size in bytes.
func (b *BAR) Size() uint64 { return b.size }

func (b *BAR) region(off uint64) (Region, bool) {
	i := sort.Search(len(b.regions), func(i int) bool { return b.regions[i].Base+b.regions[i].Size > off })
	if i < len(b.regions) && b.regions[i].Base <= off {
		return b.regions[i], true
	}
	return Region{}, false
}

// Read32 reads the register at off (which must be inside the BAR).
func (b *BAR) Read32(off uint64) uint32 {
	if r, ok := b.region(off); ok {
		if v, ok := r.Block.Read32(off - r.Base); ok {
			return v
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.plain[off]
}

// Write32 writes the register at off (which must be inside the BAR).
func (b *BAR) Write32(off uint64, v uint32) {
	if r, ok := b.region(off); ok && r.Block.Write32(off-r.Base, v) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v == 0 {
		delete(b.plain, off) // a sparse file: zero is the default
		return
	}
	if _, ok := b.plain[off]; ok || len(b.plain) < maxPlain {
		b.plain[off] = v
	}
}
