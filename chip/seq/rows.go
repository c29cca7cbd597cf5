package seq

// The element-wise records' fast path: when every operand's pattern is a
// sequence of contiguous runs (unit step inside a run), the walk hands
// whole pieces of runs to a typed row kernel instead of one element at a
// time to a closure. The pieces come in the element walker's order and a
// kernel computes a piece's elements in order, so the results are the
// walker's bit for bit; the one case where they could differ, a
// destination that overlaps a source other than element for element, is
// left to the walker.

// rowMin is the shortest common run worth the fast path; shorter runs
// go to the element walker.
const rowMin = 8

// rowMax is the longest piece handed to a kernel at once: its three
// scratch rows (24 KiB) stay in the first-level cache.
const rowMax = 2048

// rowKernel computes m elements of partition p (0..n-1 of the record):
// d, a and b hold exactly m elements each (a, b nil when absent).
type rowKernel func(p int, d, a, b []byte, m int)

// runLen is how many elements of t, from the first, lie one after the
// other in memory: the innermost dimensions that continue each other.
func runLen(t Tensor4D) uint64 {
	l := uint64(1)
	for i := range 4 {
		switch {
		case t.Num[i] == 1:
		case int64(t.Step[i]) == int64(l):
			l *= uint64(t.Num[i])
		default:
			return l
		}
	}
	return l
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// clobbers reports whether writing d may change what s reads other than
// element for element: the same partitions of one region with byte
// ranges that meet, unless both are the same pattern of one element size.
func clobbers(d, s *operand) bool {
	dp, sp := d.pl, s.pl
	switch {
	case dp.g != sp.g || dp.p0 != sp.p0 || dp.hi <= sp.lo || sp.hi <= dp.lo:
		return false
	case dp.off == sp.off && dp.size == sp.size && d.t == s.t:
		return false
	}
	return true
}

// rowChunk is the run length every operand shares, 0 when the fast path
// does not apply (runs too short, or a destination that clobbers).
func rowChunk(dst *operand, srcs ...*operand) uint64 {
	c := runLen(dst.t)
	for _, s := range srcs {
		if s == nil {
			continue
		}
		if clobbers(dst, s) {
			return 0
		}
		c = gcd(c, runLen(s.t))
	}
	if c < rowMin {
		return 0
	}
	return c
}

// advance moves the cursor n elements on; it divides only where a
// dimension wraps.
func (c *cursor) advance(n uint64) {
	for i := 0; i < 4 && n != 0; i++ {
		num := uint64(c.t.Num[i])
		if num == 1 {
			continue
		}
		k := uint64(c.k[i]) + n
		if n = 0; k >= num {
			k, n = k%num, k/num
		}
		c.off += (int64(k) - int64(c.k[i])) * int64(c.t.Step[i]) * c.sz
		c.k[i] = uint16(k)
	}
}

// rowPart is one operand on one partition: its bytes and its cursor.
type rowPart struct {
	o   *operand
	buf []byte
	c   cursor
}

// open fetches partition p's bytes; an absent operand stays empty.
func (rp *rowPart) open(mem OnChip, p int, write bool) error {
	if rp.o == nil {
		return nil
	}
	var err error
	rp.buf, err = rp.o.pl.part(mem, p, write)
	rp.c = newCursor(rp.o.t, rp.o.pl)
	return err
}

// piece is the m elements from the cursor's, then moves it on by m.
func (rp *rowPart) piece(m uint64) []byte {
	if rp.o == nil {
		return nil
	}
	sz := uint64(rp.c.sz)
	b := rp.buf[rp.c.off : uint64(rp.c.off)+m*sz]
	rp.c.advance(m)
	return b
}

// rows runs k over the record's elements in pieces when the operands
// allow it (see rowChunk), calling start (if not nil) as each partition
// begins: handled is false when they do not, or the engine is set to
// walk elements only, and nothing was done.
func (r *run) rows(n int, mem OnChip, dst, s0, s1 *operand, k rowKernel, start func(p int) error) (handled, stopped bool, err error) {
	chunk := rowChunk(dst, s0, s1)
	if chunk == 0 || r.cfg.elementsOnly {
		return false, false, nil
	}
	tk := r.ticker()
	count := dst.t.elems()
	ps := [3]rowPart{{o: dst}, {o: s0}, {o: s1}}
	for p := range n {
		for i := range ps {
			if err := ps[i].open(mem, p, i == 0); err != nil {
				return true, false, err
			}
		}
		if start != nil {
			if err := start(p); err != nil {
				return true, false, err
			}
		}
		for done := uint64(0); done < count; {
			m := min(chunk-done%chunk, rowMax)
			k(p, ps[0].piece(m), ps[1].piece(m), ps[2].piece(m), int(m))
			done += m
			if tk.left -= int(m); tk.left <= 0 {
				tk.left = checkEvery
				if r.stopped() {
					return true, true, nil
				}
			}
		}
	}
	return true, false, nil
}
