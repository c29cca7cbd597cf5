package mmio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Backed backs a range of the BAR with bytes: on the chip the TPB
// windows' state buffer and engine RAMs are memory, the same bytes a DMA
// reaches at their SoC address. Blocks placed over a Backed keep their
// behaviour; every other word of its range is a store.
type Backed struct {
	Name       string
	Base, Size uint64
	// Bytes returns the memory behind [off, off+n) of the range (off is
	// relative to Base). A write may be refused (the host's memory limit):
	// the error says why.
	Bytes func(off, n uint64, write bool) ([]byte, error)
}

// ErrRefused wraps a write the backing memory refused.
var ErrRefused = errors.New("mmio: BAR write refused")

func (b *BAR) memoryAt(off uint64) (Backed, bool) {
	i := sort.Search(len(b.memory), func(i int) bool { return b.memory[i].Base+b.memory[i].Size > off })
	if i < len(b.memory) && b.memory[i].Base <= off {
		return b.memory[i], true
	}
	return Backed{}, false
}

// overRegion reports whether a block lies over any byte of [off, off+n).
func (b *BAR) overRegion(off, n uint64) bool {
	i := sort.Search(len(b.regions), func(i int) bool { return b.regions[i].Base+b.regions[i].Size > off })
	return i < len(b.regions) && b.regions[i].Base < off+n
}

func (b *BAR) readMemory(m Backed, off uint64) (uint32, error) {
	w, err := m.Bytes(off-m.Base, 4, false)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(w), nil
}

func (b *BAR) writeMemory(m Backed, off uint64, v uint32) error {
	w, err := m.Bytes(off-m.Base, 4, true)
	if err != nil {
		return fmt.Errorf("%w: %s %#x: %v", ErrRefused, m.Name, off, err)
	}
	binary.LittleEndian.PutUint32(w, v)
	return nil
}

// WriteRun stores the little-endian words of data at off, off+4, ... as
// one copy when the whole run is memory under no block, which is how the
// runtime installs microcode (one address per word, consecutive). It
// reports false, having written nothing, for any other run: the caller
// writes those word by word.
func (b *BAR) WriteRun(off uint64, data []byte) (bool, error) {
	n := uint64(len(data))
	if n == 0 || n%4 != 0 || off%4 != 0 || off+n < off || off+n > b.size {
		return false, nil
	}
	m, ok := b.memoryAt(off)
	if !ok || off+n > m.Base+m.Size || b.overRegion(off, n) {
		return false, nil
	}
	w, err := m.Bytes(off-m.Base, n, true)
	if err != nil {
		return false, fmt.Errorf("%w: %s %#x+%#x: %v", ErrRefused, m.Name, off, n, err)
	}
	copy(w, data)
	return true, nil
}

// PlainRange is a run of written BAR words that no block models and no
// memory backs: what the runtime touched that the emulator does not
// understand.
type PlainRange struct {
	Base  uint64 // BAR offset of the first word
	Words int    // non-zero words in the range
}

// plainGroup is the span PlainRanges gather words in.
const plainGroup = 0x1000

// Plain reports the non-zero plain words and, grouped by 4 KiB page of
// the BAR, where they are, in address order.
func (b *BAR) Plain() (words int, ranges []PlainRange) {
	b.mu.Lock()
	byPage := map[uint64]int{}
	for off := range b.plain {
		byPage[off&^(plainGroup-1)]++
	}
	words = len(b.plain)
	b.mu.Unlock()
	for base, n := range byPage {
		ranges = append(ranges, PlainRange{Base: base, Words: n})
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Base < ranges[j].Base })
	return words, ranges
}
