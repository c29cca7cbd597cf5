package chip

import (
	"encoding/binary"
	"slices"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// hbmPattern remembers non-zero HBM scrubs. A scrubbed channel reads as
// its 32-bit pattern wherever nothing was written since, but writing the
// pattern over 16-36 GiB at once would need that much host memory. So the
// channel is emptied at scrub time and each 64 KiB block gets the pattern
// when something first reaches it: an allocation (before any mapping can
// see it), a copy, or a DMA engine. Memory costs only what is used.
//
// Accesses outside scrubbed channels cost one atomic load; accesses to a
// scrubbed channel take that channel's lock, held while blocks are
// written, so a second access to a block waits until it holds the pattern.
type hbmPattern struct {
	fd    int // the device's physical memory
	mu    lockrank.Mutex[lockrank.Pattern]
	chans atomic.Pointer[[]*patternChannel] // channels with pending blocks; replaced, never changed
}

const patternBlock = 64 << 10

type patternChannel struct {
	ch         int
	base, size uint64 // the scrubbed range
	block      []byte // one block of the pattern

	mu      lockrank.Mutex[lockrank.Pattern]
	pending []uint64
	left    int // blocks still pending
}

func newHBMPattern(fd int) *hbmPattern { return &hbmPattern{fd: fd} }

// scrub records that channel ch's range [base, base+size) now holds
// value everywhere; value 0 forgets it.
func (p *hbmPattern) scrub(ch int, base, size uint64, value uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var next []*patternChannel
	if cur := p.chans.Load(); cur != nil {
		next = slices.DeleteFunc(slices.Clone(*cur), func(c *patternChannel) bool { return c.ch == ch })
	}
	if value != 0 {
		blocks := int((size + patternBlock - 1) / patternBlock)
		c := &patternChannel{ch: ch, base: base, size: size, block: make([]byte, patternBlock),
			pending: make([]uint64, (blocks+63)/64), left: blocks}
		for i := 0; i < patternBlock; i += 4 {
			binary.LittleEndian.PutUint32(c.block[i:], value)
		}
		for i := range blocks {
			c.pending[i/64] |= 1 << (i % 64)
		}
		next = append(next, c)
	}
	p.publishLocked(next)
}

func (p *hbmPattern) publishLocked(next []*patternChannel) {
	if len(next) == 0 {
		p.chans.Store(nil)
		return
	}
	p.chans.Store(&next)
}

// fill writes the pattern into every still-pending block that
// [pa, pa+n) touches, so that the access about to happen finds it.
func (p *hbmPattern) fill(pa, n uint64) {
	cur := p.chans.Load()
	if cur == nil || n == 0 {
		return
	}
	for _, c := range *cur {
		lo, hi := max(pa, c.base), min(pa+n, c.base+c.size)
		if lo < hi && c.fill(p.fd, lo, hi) {
			p.retire(c)
		}
	}
}

// fill writes the pending blocks of [lo, hi) and reports whether the
// channel has none left.
func (c *patternChannel) fill(fd int, lo, hi uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left == 0 {
		return false
	}
	for b := (lo - c.base) / patternBlock; b <= (hi-1-c.base)/patternBlock; b++ {
		if c.pending[b/64]&(1<<(b%64)) == 0 {
			continue
		}
		off := c.base + b*patternBlock
		// A failed write leaves zeros, as an unscrubbed page would.
		unix.Pwrite(fd, c.block[:min(patternBlock, c.base+c.size-off)], int64(off))
		c.pending[b/64] &^= 1 << (b % 64)
		c.left--
	}
	return c.left == 0
}

// retire drops a channel whose every block holds the pattern.
func (p *hbmPattern) retire(c *patternChannel) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur := p.chans.Load(); cur != nil {
		p.publishLocked(slices.DeleteFunc(slices.Clone(*cur), func(x *patternChannel) bool { return x == c }))
	}
}
