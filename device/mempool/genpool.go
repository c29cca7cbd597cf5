package mempool

// This file models the kernel's gen_pool (lib/genalloc.c) as the driver
// uses it: one contiguous chunk per pool, a 4 KiB granule, and the three
// search algorithms the driver selects (first fit, aligned first fit and
// fixed offset). The kernel keeps a bitmap over the whole range; here the
// free space is a set of maximal free extents in a treap augmented with
// the longest extent of each subtree, so an untouched 24 GiB channel costs
// one node and a search costs O(log n) in the number of free extents.

const granuleShift = 12 // log2 of the pool granule (PAGE_SIZE on x86_64)

// extent is a maximal run of free granules [start, end), numbered from the
// start of its pool, and a treap node keyed by start.
type extent struct {
	start, end  uint64
	prio        uint32
	maxLen      uint64 // longest extent in this subtree
	left, right *extent
}

func (e *extent) length() uint64 { return e.end - e.start }

func subtreeMax(e *extent) uint64 {
	if e == nil {
		return 0
	}
	return e.maxLen
}

func (e *extent) fix() {
	m := e.length()
	if l := subtreeMax(e.left); l > m {
		m = l
	}
	if r := subtreeMax(e.right); r > m {
		m = r
	}
	e.maxLen = m
}

// split cuts t into the extents starting below k and the rest.
func split(t *extent, k uint64) (lo, hi *extent) {
	if t == nil {
		return nil, nil
	}
	if t.start < k {
		l, r := split(t.right, k)
		t.right = l
		t.fix()
		return t, r
	}
	l, r := split(t.left, k)
	t.left = r
	t.fix()
	return l, t
}

// join concatenates two treaps; every key of a is below every key of b.
func join(a, b *extent) *extent {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = join(a.right, b)
		a.fix()
		return a
	default:
		b.left = join(a, b.left)
		b.fix()
		return b
	}
}

// freeSet is the set of free extents of one pool.
type freeSet struct {
	root  *extent
	seed  uint32 // xorshift state for treap priorities (deterministic)
	free  uint64 // free granules in total
	count int    // number of extents
}

func (s *freeSet) nextPrio() uint32 {
	if s.seed == 0 {
		s.seed = 0x9e3779b9
	}
	x := s.seed
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	s.seed = x
	return x
}

func (s *freeSet) insert(start, end uint64) {
	n := &extent{start: start, end: end, prio: s.nextPrio()}
	n.fix()
	lo, hi := split(s.root, start)
	s.root = join(join(lo, n), hi)
	s.free += end - start
	s.count++
}

// remove deletes the extent that starts at start (which must exist).
func (s *freeSet) remove(start uint64) {
	lo, rest := split(s.root, start)
	mid, hi := split(rest, start+1)
	if mid == nil {
		panic("mempool: removing a free extent that does not exist")
	}
	s.free -= mid.length()
	s.count--
	s.root = join(lo, hi)
}

// floor returns the extent with the greatest start <= x, or nil.
func (s *freeSet) floor(x uint64) *extent {
	var best *extent
	for n := s.root; n != nil; {
		if n.start <= x {
			best = n
			n = n.right
		} else {
			n = n.left
		}
	}
	return best
}

// containing returns the extent holding granule x, or nil if x is in use.
func (s *freeSet) containing(x uint64) *extent {
	if e := s.floor(x); e != nil && x < e.end {
		return e
	}
	return nil
}

// firstFit returns the lowest extent starting at or after from whose
// length is at least nr, or nil.
func (s *freeSet) firstFit(from, nr uint64) *extent {
	return firstFitIn(s.root, from, nr)
}

func firstFitIn(n *extent, from, nr uint64) *extent {
	for n != nil && n.maxLen >= nr {
		if n.start < from {
			// n and its whole left subtree start below from.
			n = n.right
			continue
		}
		if e := firstFitIn(n.left, from, nr); e != nil {
			return e
		}
		if n.length() >= nr {
			return n
		}
		n = n.right
	}
	return nil
}

// take marks [at, at+nr) used; the range must lie inside free extent e.
func (s *freeSet) take(e *extent, at, nr uint64) {
	start, end := e.start, e.end
	s.remove(start)
	if start < at {
		s.insert(start, at)
	}
	if at+nr < end {
		s.insert(at+nr, end)
	}
}

// give marks [start, start+nr) free again, merging with its neighbours.
func (s *freeSet) give(start, nr uint64) {
	end := start + nr
	if p := s.floor(end - 1); p != nil && p.end > start {
		panic("mempool: freeing a range that is already free")
	}
	if p := s.floor(start); p != nil && p.end == start {
		start = p.start
		s.remove(p.start)
	}
	if n := s.floor(end); n != nil && n.start == end {
		end = n.end
		s.remove(n.start)
	}
	s.insert(start, end)
}

// genpool is one gen_pool with a single chunk of nbits granules at base.
// va is the chunk's start_addr as the kernel pool sees it (device pools
// store the physical address with bit 63 set); only its low bits matter,
// for the alignment offset.
type genpool struct {
	base  uint64
	va    uint64
	nbits uint64
	fs    freeSet
}

func newGenpool(base, size, va uint64) *genpool {
	g := &genpool{base: base, va: va, nbits: size >> granuleShift}
	if g.nbits > 0 {
		g.fs.insert(0, g.nbits)
	}
	return g
}

// availBytes is the chunk's avail counter.
func (g *genpool) availBytes() uint64 { return g.fs.free << granuleShift }

// granules is the bit count gen_pool_alloc derives from a byte size, or 0
// when gen_pool_alloc would give up before searching (zero size, or more
// than the chunk has free).
func (g *genpool) granules(size uint64) uint64 {
	if size == 0 || size > g.availBytes() {
		return 0
	}
	return (size + 1<<granuleShift - 1) >> granuleShift
}

func (g *genpool) addr(bit uint64) uint64 { return g.base + bit<<granuleShift }

// alloc is gen_pool_alloc with gen_pool_first_fit: the lowest free run.
func (g *genpool) alloc(size uint64) (uint64, bool) {
	nr := g.granules(size)
	if nr == 0 {
		return 0, false
	}
	e := g.fs.firstFit(0, nr)
	if e == nil {
		return 0, false
	}
	at := e.start
	g.fs.take(e, at, nr)
	return g.addr(at), true
}

// alignMask is the kernel's __ALIGN_MASK(x, mask).
func alignMask(x, mask uint64) uint64 { return (x + mask) &^ mask }

// allocAlign is gen_pool_alloc_algo with gen_pool_first_fit_align and the
// given byte alignment (the caller keeps it <= INT_MAX). The result is not
// guaranteed to be aligned when align is not a power of two: the kernel
// then searches with a mask that is not of the form 2^k-1, and so do we.
func (g *genpool) allocAlign(size, align uint64) (uint64, bool) {
	nr := g.granules(size)
	if nr == 0 {
		return 0, false
	}
	mask := ((align + 1<<granuleShift - 1) >> granuleShift) - 1
	off := (g.va & (align - 1)) >> granuleShift
	var at uint64
	var ok bool
	if mask&(mask+1) == 0 {
		at, ok = g.searchAligned(nr, mask, off)
	} else {
		at, ok = g.searchAlignedLiteral(nr, mask, off)
	}
	if !ok {
		return 0, false
	}
	g.fs.take(g.fs.containing(at), at, nr)
	return g.addr(at), true
}

// searchAligned finds the lowest index i with (i+off)&mask == 0 whose run
// [i, i+nr) is free. For a mask of the form 2^k-1 this is exactly what
// bitmap_find_next_zero_area_off returns, and extents shorter than nr can
// be skipped.
func (g *genpool) searchAligned(nr, mask, off uint64) (uint64, bool) {
	for from := uint64(0); ; {
		e := g.fs.firstFit(from, nr)
		if e == nil {
			return 0, false
		}
		i := alignMask(e.start+off, mask) - off
		if i+nr <= e.end {
			return i, true
		}
		from = e.start + 1
	}
}

// searchAlignedLiteral replays bitmap_find_next_zero_area_off step by step
// over the extents; used for masks where "aligned" is not monotone.
func (g *genpool) searchAlignedLiteral(nr, mask, off uint64) (uint64, bool) {
	for cur := uint64(0); ; {
		// find_next_zero_bit(map, nbits, cur)
		z := g.nbits
		if cur < g.nbits {
			if g.fs.containing(cur) != nil {
				z = cur
			} else if e := g.fs.firstFit(cur+1, 1); e != nil {
				z = e.start
			}
		}
		i := alignMask(z+off, mask) - off
		end := i + nr
		if end > g.nbits {
			return 0, false
		}
		// find_next_bit(map, end, i): the first used granule in [i, end).
		if e := g.fs.containing(i); e != nil {
			if e.end >= end {
				return i, true
			}
			cur = e.end + 1
		} else {
			cur = i + 1
		}
	}
}

// allocFixed is gen_pool_alloc_algo with gen_pool_fixed_alloc: it succeeds
// only if the run at exactly offset bytes from the pool start is free.
func (g *genpool) allocFixed(offset, size uint64) (uint64, bool) {
	nr := g.granules(size)
	if nr == 0 || offset&(1<<granuleShift-1) != 0 {
		return 0, false
	}
	at := offset >> granuleShift
	if at >= g.nbits || nr > g.nbits-at {
		return 0, false
	}
	e := g.fs.containing(at)
	if e == nil || e.end < at+nr {
		return 0, false
	}
	g.fs.take(e, at, nr)
	return g.addr(at), true
}

// free is gen_pool_free of [addr, addr+size).
func (g *genpool) free(addr, size uint64) {
	nr := (size + 1<<granuleShift - 1) >> granuleShift
	g.fs.give((addr-g.base)>>granuleShift, nr)
}
