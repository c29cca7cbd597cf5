package seq

import (
	"math"
	"runtime"
	"sync"
)

// The PE's product: dst[m, n] (+)= Σ_k stat[k, m]·mov[k, n] in fp32, and
// transpose mode, which copies the tile's elements instead.

// peChunk is how many moving columns a MATMUL takes at a time: the
// scratch stays 128×peChunk fp32 however many elements a pattern names
// (a record may name 2^48).
const peChunk = 512

// scratch sizes the PE's reused buffers.
func (pe *peState) scratch() {
	if pe.acc == nil {
		pe.acc = make([]float32, Partitions*peChunk)
		pe.mov = make([]float32, Partitions*peChunk)
		pe.w = make([]float32, Partitions*Partitions)
	}
}

// open returns the moving partitions' and destination partitions' bytes
// with a cursor at each one's first element.
func (pe *peState) open(t *peTile, mm *Matmul, src, dst place, mem OnChip) (movs, outs [Partitions][]byte, err error) {
	for k := range t.rows {
		if movs[k], err = src.part(mem, k, false); err != nil {
			return movs, outs, err
		}
		pe.mc[k] = newCursor(mm.Src.t4(), src)
	}
	for m := range t.cols {
		if outs[m], err = dst.part(mem, m, true); err != nil {
			return movs, outs, err
		}
		pe.dc[m] = newCursor(mm.Dst.t4(), dst)
	}
	return movs, outs, nil
}

// weights is the tile as this MATMUL multiplies it, w[m*rows+k]: column
// m's weights in k order, an fp32 tile rounded by fp32_mode.
func (pe *peState) weights(t *peTile, mm *Matmul) []float32 {
	round := fp32Rounds[mm.FP32Mode]
	w := pe.w[:t.rows*t.cols]
	for k := range t.rows {
		for m := range t.cols {
			v := t.w[k*Partitions+m]
			if t.dtype == DtypeFP32 {
				v = round(v)
			}
			w[m*t.rows+k] = v
		}
	}
	return w
}

// multiply accumulates stat·mov over the K partitions in fp32, k in
// order (G-PE7), peChunk columns at a time, then writes or adds those
// columns of the M×N result to PSUM in the output dtype.
func (r *run) multiply(t *peTile, mm *Matmul, src, dst place, n int64, mem OnChip) (stopped bool, err error) {
	pe := r.pe
	pe.scratch()
	movs, outs, err := pe.open(t, mm, src, dst, mem)
	if err != nil {
		return false, err
	}
	w := pe.weights(t, mm)
	out := &dtypes[mm.outDtype(t)]
	start := mm.Accum&AccumStart != 0
	tk := r.ticker()
	for n0 := int64(0); n0 < n; n0 += peChunk {
		cw := int(min(peChunk, n-n0))
		if pe.loadMoving(t.rows, cw, mm, &movs, &tk) {
			return true, nil
		}
		acc := pe.acc[:t.cols*cw]
		macSplit(acc, w, pe.mov, t.rows, t.cols, cw)
		for m := range t.cols {
			pe.store(&outs[m], &pe.dc[m], acc[m*cw:(m+1)*cw], mm, out, start)
		}
	}
	return false, nil
}

// store writes (start) or adds one output partition's columns at c.
func (pe *peState) store(b *[]byte, c *cursor, acc []float32, mm *Matmul, out *dtypeInfo, start bool) {
	if out.size == 4 && dim0Run(mm.Dst) { // fp32, adjacent: no cursor, no calls
		d := (*b)[c.off:][:4*len(acc)]
		for j, v := range acc {
			if !start {
				v += math.Float32frombits(le.Uint32(d[4*j:]))
			}
			le.PutUint32(d[4*j:], math.Float32bits(v))
		}
		c.skip(len(acc))
		return
	}
	for _, v := range acc {
		if !start {
			v += out.load((*b)[c.off:])
		}
		out.store((*b)[c.off:], v)
		c.next()
	}
}

// loadMoving converts cw columns of the moving tile's rows partitions
// to fp32 (rounded by fp32_mode) into pe.mov, row k at k*peChunk. It
// reports whether the run was stopped.
func (pe *peState) loadMoving(rows, cw int, mm *Matmul, movs *[Partitions][]byte, tk *ticker) bool {
	in := peInputs[mm.InDtype]
	round := fp32Rounds[mm.FP32Mode]
	run := dim0Run(mm.Src)
	for k := range rows {
		row, c, xs := movs[k], &pe.mc[k], pe.mov[k*peChunk:k*peChunk+cw]
		if run && round == nil { // one run of adjacent elements: no cursor
			if tk.stoppedAfter(cw) {
				return true
			}
			in.loadRun(xs, row[c.off:])
			c.skip(cw)
			continue
		}
		for j := range xs {
			if tk.tick() {
				return true
			}
			x := in.load(row[c.off:])
			if round != nil {
				x = round(x)
			}
			xs[j] = x
			c.next()
		}
	}
	return false
}

// dim0Run is whether t's elements are one run of adjacent elements.
func dim0Run(t Tensor3D) bool { return t.Step[0] == 1 && int64(t.Num[0]) == t.elems() }

// loadRun converts len(xs) adjacent elements from b.
func (in peInput) loadRun(xs []float32, b []byte) {
	if in.run != nil {
		in.run(xs, b)
		return
	}
	for j := range xs {
		xs[j] = in.load(b[uint32(j)*in.size:])
	}
}

// skip moves a dim-0 run's cursor n elements on.
func (c *cursor) skip(n int) {
	c.off += int64(n) * int64(c.t.Step[0]) * c.sz
	c.k[0] += uint16(n)
}

// stoppedAfter counts n elements; true when the run was stopped.
func (t *ticker) stoppedAfter(n int) bool {
	if t.left -= n; t.left > 0 {
		return false
	}
	t.left = checkEvery
	return t.r.stopped()
}

// peSplit is the least work (multiply-adds) a chunk is shared out for,
// and peSplitCols the fewest output partitions one goroutine takes.
const (
	peSplit     = 1 << 18
	peSplitCols = 32
)

// macSplit computes the chunk's cols output partitions, shared among up
// to GOMAXPROCS goroutines by output partition (as the host's GEMM
// shares its blocks): each sum is still one goroutine's, k in order, so
// the result does not depend on the split.
func macSplit(acc, w, mov []float32, rows, cols, cw int) {
	parts := min(runtime.GOMAXPROCS(0), cols/peSplitCols)
	if rows*cols*cw < peSplit || parts < 2 {
		// Here, not in a closure: one that goroutines may run escapes,
		// and would cost every chunk of every MATMUL two allocations.
		for m := range cols {
			mac(acc[m*cw:(m+1)*cw], w[m*rows:(m+1)*rows], mov, cw)
		}
		return
	}
	span := (cols + parts - 1) / parts
	var wg sync.WaitGroup
	for m0 := 0; m0 < cols; m0 += span {
		do := func() {
			for m := m0; m < min(m0+span, cols); m++ {
				mac(acc[m*cw:(m+1)*cw], w[m*rows:(m+1)*rows], mov, cw)
			}
		}
		if m0+span >= cols { // the last share runs here
			do()
			break
		}
		wg.Go(do)
	}
	wg.Wait()
}

// mac sets acc[j] = Σ_k w[k]·mov[k*peChunk+j], adding k in order, four
// rows a pass so acc is loaded and stored a quarter as often (the sums'
// order, hence their rounding, is unchanged; eight rows spill registers).
func mac(acc, w, mov []float32, cw int) {
	clear(acc)
	row := func(k int) []float32 { return mov[k*peChunk : k*peChunk+cw][:len(acc)] }
	k := 0
	for ; k+4 <= len(w); k += 4 {
		w0, w1, w2, w3 := w[k], w[k+1], w[k+2], w[k+3]
		x0, x1, x2, x3 := row(k), row(k+1), row(k+2), row(k+3)
		for j := range acc {
			a := acc[j] + float32(w0*x0[j])
			a += float32(w1 * x1[j])
			a += float32(w2 * x2[j])
			acc[j] = a + float32(w3*x3[j])
		}
	}
	for ; k < len(w); k++ {
		wk, x := w[k], row(k)
		for j := range acc {
			acc[j] += float32(wk * x[j])
		}
	}
}

// transpose runs a MATMUL in transpose mode: the moving tile is the
// identity, so dst[m, n] is the tile's element [k, m] for the row k that
// moving column n selects, copied bit for bit (NKI: exact on V3 and
// later, NaN and Inf included). G-PE9: the first row whose moving
// element is non-zero selects; a column with none gives 0.
func (r *run) transpose(t *peTile, mm *Matmul, src, dst place, n int64, mem OnChip) (stopped bool, err error) {
	pe := r.pe
	pe.scratch()
	movs, outs, err := pe.open(t, mm, src, dst, mem)
	if err != nil {
		return false, err
	}
	in := peInputs[mm.InDtype]
	size := peInputs[t.dtype].size
	var sel [peChunk]int
	tk := r.ticker()
	for n0 := int64(0); n0 < n; n0 += peChunk {
		cw := int(min(peChunk, n-n0))
		for j := range cw {
			sel[j] = -1
		}
		for k := range t.rows {
			row, c := movs[k], &pe.mc[k]
			for j := range cw {
				if tk.tick() {
					return true, nil
				}
				if sel[j] < 0 && in.load(row[c.off:]) != 0 {
					sel[j] = k
				}
				c.next()
			}
		}
		for m := range t.cols {
			b, c := outs[m], &pe.dc[m]
			for _, k := range sel[:cw] {
				var v uint32
				if k >= 0 {
					v = t.bits[k*Partitions+m]
				}
				putBits(b[c.off:], size, v)
				c.next()
			}
		}
	}
	return false, nil
}

// putBits stores the low size bytes of v at b, little-endian.
func putBits(b []byte, size uint32, v uint32) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		le.PutUint16(b, uint16(v))
	default:
		le.PutUint32(b, v)
	}
}
