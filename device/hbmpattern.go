package device

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// hbmPattern remembers non-zero HBM scrubs. A scrubbed channel reads as
// its 32-bit pattern wherever nothing was written since, but writing the
// pattern over 16-36 GiB at once would need that much host memory. So the
// channel is emptied at scrub time and each 64 KiB block gets the pattern
// when something first reaches it: an allocation (before any mapping can
// see it), a copy, or a DMA engine. Memory costs only what is used.
type hbmPattern struct {
	fd     int // the device's physical memory
	active atomic.Bool
	mu     sync.Mutex
	chans  map[int]*patternChannel
}

const patternBlock = 64 << 10

type patternChannel struct {
	base, size uint64 // the scrubbed range
	block      []byte // one block of the pattern
	pending    []uint64
	left       int // blocks still pending
}

func newHBMPattern(fd int) *hbmPattern {
	return &hbmPattern{fd: fd, chans: map[int]*patternChannel{}}
}

// scrub records that channel ch's range [base, base+size) now holds
// value everywhere (size a multiple of the block); value 0 forgets it.
func (p *hbmPattern) scrub(ch int, base, size uint64, value uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.chans, ch)
	if value != 0 {
		blocks := int((size + patternBlock - 1) / patternBlock)
		c := &patternChannel{base: base, size: size, block: make([]byte, patternBlock),
			pending: make([]uint64, (blocks+63)/64), left: blocks}
		for i := 0; i < patternBlock; i += 4 {
			binary.LittleEndian.PutUint32(c.block[i:], value)
		}
		for i := range blocks {
			c.pending[i/64] |= 1 << (i % 64)
		}
		p.chans[ch] = c
	}
	p.active.Store(len(p.chans) > 0)
}

// fill writes the pattern into every still-pending block that
// [pa, pa+n) touches, so that the access about to happen finds it.
func (p *hbmPattern) fill(pa, n uint64) {
	if !p.active.Load() || n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch, c := range p.chans {
		lo, hi := max(pa, c.base), min(pa+n, c.base+c.size)
		if lo >= hi {
			continue
		}
		for b := (lo - c.base) / patternBlock; b <= (hi-1-c.base)/patternBlock; b++ {
			if c.pending[b/64]&(1<<(b%64)) == 0 {
				continue
			}
			off := c.base + b*patternBlock
			// A failed write leaves zeros, as an unscrubbed page would.
			unix.Pwrite(p.fd, c.block[:min(patternBlock, c.base+c.size-off)], int64(off))
			c.pending[b/64] &^= 1 << (b % 64)
			c.left--
		}
		if c.left == 0 {
			delete(p.chans, ch)
		}
	}
	p.active.Store(len(p.chans) > 0)
}
