package mempool

import "slices"

// Range is [Start, End) of physical addresses.
type Range struct{ Start, End uint64 }

// Allocated calls fn with the ranges whose memory the allocator has
// handed out, in address order and possibly overlapping: every live
// chunk (a contiguous scratchpad up to the end of its main pool, as far
// as it may be mapped and accessed), and every chunk freed while an access
// pins it. It holds the pool's lock while fn runs, so nothing is handed
// out meanwhile; fn must take no lock of the Pool rank or above.
func (p *Pool) Allocated(fn func([]Range)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rs []Range
	add := func(c *Chunk) {
		end := c.PA + c.Size
		if c.IsScratchpad() {
			end = max(end, c.mainEnd)
		}
		rs = append(rs, Range{c.PA, end})
	}
	for _, c := range p.hostList {
		add(c)
	}
	for _, ch := range p.channels {
		for _, c := range ch.chunks {
			add(c)
		}
	}
	for c := range p.pinnedFreed {
		add(c)
	}
	slices.SortFunc(rs, func(a, b Range) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	fn(rs)
}
