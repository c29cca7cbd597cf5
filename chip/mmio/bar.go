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

// BAR is one device's BAR0.
type BAR struct {
	size    uint64
	regions []Region // sorted by base, disjoint
	memory  []Backed // sorted by base, disjoint; under the regions

	mu lockrank.Mutex[lockrank.Registers]
	// plain holds the non-zero words nothing models or backs. A word
	// written is never dropped silently (Plain names them); past
	// MaxPlainWords a new word is refused, since each costs the daemon's
	// heap and no memory limit admits it.
	plain map[uint64]uint32
}

// MaxPlainWords bounds the plain words one BAR keeps (about 40 MiB of
// heap at most). The runtime's documented bring-up leaves a few thousand
// once the TPB windows are memory; a client writing distinct unmodelled
// addresses gets ErrRefused (the driver's caller sees ENOMEM) past it,
// an emulator's limit the hardware does not have.
const MaxPlainWords = 1 << 20

// NewBAR builds a BAR of size bytes with the given blocks over the given
// memory; any other word is a plain register that keeps what is written.
func NewBAR(size uint64, regions []Region, memory ...Backed) (*BAR, error) {
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
	ms := append([]Backed(nil), memory...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Base < ms[j].Base })
	for i, m := range ms {
		if m.Size == 0 || m.Base+m.Size > size || m.Base+m.Size < m.Base || m.Bytes == nil {
			return nil, fmt.Errorf("mmio: memory %s %#x+%#x outside a %#x-byte BAR", m.Name, m.Base, m.Size, size)
		}
		if i > 0 && ms[i-1].Base+ms[i-1].Size > m.Base {
			return nil, fmt.Errorf("mmio: memories %s and %s overlap", ms[i-1].Name, m.Name)
		}
	}
	return &BAR{size: size, regions: rs, memory: ms, plain: map[uint64]uint32{}}, nil
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

// Read32 reads the register at off (which must be inside the BAR). A
// word of memory the backing cannot show reads 0.
func (b *BAR) Read32(off uint64) uint32 {
	if r, ok := b.region(off); ok {
		if v, ok := r.Block.Read32(off - r.Base); ok {
			return v
		}
	}
	if m, ok := b.memoryAt(off); ok {
		v, _ := b.readMemory(m, off)
		return v
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.plain[off]
}

// Write32 writes the register at off (which must be inside the BAR).
// A write fails (ErrRefused) only when its memory's backing refused it
// or a new plain word would pass MaxPlainWords.
func (b *BAR) Write32(off uint64, v uint32) error {
	if r, ok := b.region(off); ok && r.Block.Write32(off-r.Base, v) {
		return nil
	}
	if m, ok := b.memoryAt(off); ok {
		return b.writeMemory(m, off, v)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v == 0 {
		delete(b.plain, off) // a sparse file: zero is the default
		return nil
	}
	if _, ok := b.plain[off]; !ok && len(b.plain) >= MaxPlainWords {
		return fmt.Errorf("%w: %d plain registers kept already, %#x is one more", ErrRefused, len(b.plain), off)
	}
	b.plain[off] = v
	return nil
}
