package seq

import "fmt"

// The PE's execution: the latched tiles and the product (the records
// themselves are in perecord.go).

// peTile is one latched stationary tile: w[k*Partitions+m].
type peTile struct {
	rows, cols int
	w          [Partitions * Partitions]float32
}

// peState is the PE's state across records and runs: its latched tiles
// by quadrant masks, and a scratch accumulator reused by every MATMUL.
type peState struct {
	tiles  map[uint16]*peTile // nil entry: the last load there was not emulated
	acc    []float32          // Partitions × peChunk
	mc, dc [Partitions]cursor // each moving and destination partition's place
}

func tileKey(rowGrp, colGrp uint8) uint16 { return uint16(rowGrp)<<8 | uint16(colGrp) }

// quadrants is whether g is a quadrant mask: one bit per 32 rows or
// columns of the array, at least one (59674815273: 1, 2, 4, 8, 3, 12,
// 0x0F).
func quadrants(g uint8) bool { return g != 0 && g <= 0x0F }

// evict forgets every other latch a load into (rowGrp, colGrp)
// overwrites: one sharing a row quadrant and a column quadrant with it.
// So at most 16 tiles (the array's 4×4 quadrants) are ever latched.
func (pe *peState) evict(rowGrp, colGrp uint8) {
	for k := range pe.tiles {
		if k != tileKey(rowGrp, colGrp) && uint8(k>>8)&rowGrp != 0 && uint8(k)&colGrp != 0 {
			delete(pe.tiles, k)
		}
	}
}

func (r *run) peLayout() *peLayout {
	g := r.cfg.Gen
	if g == 0 {
		g = DefaultGeneration
	}
	return peLayouts[g]
}

// peDtype is the validators' dtype rule for a PE operand, and whether
// this package computes it: bf16 and fp16 exactly; fp32 (two passes,
// G-PE4) and fp8 are counted.
func peDtype(d Dtype) (computed bool, err error) {
	if _, ok := d.info(); !ok || d == DtypeFP32R {
		return false, fmt.Errorf("%w: PE dtype %v", ErrOperand, d)
	}
	return d == DtypeBF16 || d == DtypeFP16, nil
}

// ldWeights runs an LDWEIGHTS record.
func (r *run) ldWeights(rec *Record) (skipped string, stopped bool, err error) {
	l := r.peLayout()
	if l == nil {
		return fmt.Sprintf("generation %d", r.cfg.Gen), false, nil
	}
	w := rec.ldWeights(l)
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	computed, err := peDtype(w.InDtype)
	switch {
	case err != nil:
		return "", false, err
	case w.Rows == 0 || w.Rows > Partitions || w.Cols == 0 || w.Cols > Partitions:
		return "", false, fmt.Errorf("%w: LDWEIGHTS %d rows, %d columns", ErrOperand, w.Rows, w.Cols)
	case !quadrants(w.RowGrp) || !quadrants(w.ColGrp):
		return "", false, fmt.Errorf("%w: LDWEIGHTS row_grp %#x, col_grp %#x", ErrOperand, w.RowGrp, w.ColGrp)
	}
	src, ok, err := r.placeTensor(w.Src.t4(), w.InDtype, int(w.Rows), mem)
	if err != nil {
		return "", false, err
	}
	if r.pe == nil {
		r.pe = &peState{tiles: map[uint16]*peTile{}}
	}
	key := tileKey(w.RowGrp, w.ColGrp)
	r.pe.evict(w.RowGrp, w.ColGrp)
	why := ""
	switch {
	case !ok:
		why = "indirect address"
	case !computed:
		why = w.InDtype.String()
	case w.Transpose != 0 || w.PerfOpt != 0 || w.BgXpose != 0 || w.Flags != 0:
		why = "transpose, perf or flags mode"
	case w.Src.elems() != int64(w.Cols):
		why = "source elements other than num_active_cols" // G-PE3
	}
	if why != "" {
		r.pe.tiles[key] = nil // a later MATMUL on this latch is not emulated either
		return why, false, nil
	}
	t := r.pe.tiles[key]
	if t == nil {
		t = new(peTile)
		r.pe.tiles[key] = t
	}
	t.rows, t.cols = int(w.Rows), int(w.Cols)
	in := &dtypes[w.InDtype]
	for k := range t.rows {
		b, err := src.part(mem, k, false)
		if err != nil {
			return "", false, err
		}
		c := newCursor(w.Src.t4(), src)
		for m := range t.cols {
			t.w[k*Partitions+m] = in.load(b[c.off:])
			c.next()
		}
	}
	return "", false, nil
}

// validAccum is the accumulate byte's legal set {0, 1, 2, 3, 4, 6}.
func validAccum(a uint8) bool { return a <= 6 && a != 5 }

// matmul runs a MATMUL record.
func (r *run) matmul(rec *Record) (skipped string, stopped bool, err error) {
	l := r.peLayout()
	if l == nil {
		return fmt.Sprintf("generation %d", r.cfg.Gen), false, nil
	}
	mm := rec.matmul(l)
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	computed, err := peDtype(mm.InDtype)
	switch {
	case err != nil:
		return "", false, err
	case !validAccum(mm.Accum):
		return "", false, fmt.Errorf("%w: MATMUL accumulate flags %#x", ErrOperand, mm.Accum)
	case !quadrants(mm.RowGrp) || !quadrants(mm.ColGrp):
		return "", false, fmt.Errorf("%w: MATMUL row_grp %#x, col_grp %#x", ErrOperand, mm.RowGrp, mm.ColGrp)
	case mm.OutDtype != 0 && mm.OutDtype != DtypeFP32 && mm.OutDtype != DtypeBF16:
		return "", false, fmt.Errorf("%w: MATMUL output %v", ErrOperand, mm.OutDtype)
	}
	var t *peTile
	if r.pe != nil {
		t = r.pe.tiles[tileKey(mm.RowGrp, mm.ColGrp)]
	}
	if t == nil {
		return "no emulated weights latched", false, nil
	}
	n := mm.Src.elems()
	if mm.Dst.elems() != n {
		return "", false, fmt.Errorf("%w: MATMUL %d moving elements, %d destination elements", ErrOperand, n, mm.Dst.elems())
	}
	src, ok1, err := r.placeTensor(mm.Src.t4(), mm.InDtype, t.rows, mem)
	if err != nil {
		return "", false, err
	}
	dst, ok2, err := r.placeTensor(mm.Dst.t4(), DtypeFP32, t.cols, mem)
	switch {
	case err != nil:
		return "", false, err
	case ok2 && dst.g != PSUM:
		return "", false, fmt.Errorf("%w: MATMUL writes %v", ErrOperand, dst.g)
	case !ok1 || !ok2:
		return "indirect address", false, nil
	case !computed:
		return mm.InDtype.String(), false, nil
	case mm.OutDtype == DtypeBF16:
		return mm.OutDtype.String(), false, nil
	case mm.Transpose != 0 || mm.PerfOpt != 0 || mm.Flags != 0 || mm.FP32Mode != 0:
		return "transpose, perf, fp32 or flags mode", false, nil
	}
	stopped, err = r.multiply(t, &mm, src, dst, n, mem)
	return "", stopped, err
}

// peChunk is how many moving columns a MATMUL accumulates at a time:
// the scratch stays 128×peChunk fp32 however many elements a pattern
// names (a record may name 2^48).
const peChunk = 512

// multiply accumulates stat·mov over the K partitions in fp32, k in
// order (G-PE7), peChunk columns at a time, then writes or adds those
// columns of the M×N result to PSUM.
func (r *run) multiply(t *peTile, mm *Matmul, src, dst place, n int64, mem OnChip) (stopped bool, err error) {
	pe := r.pe
	if pe.acc == nil {
		pe.acc = make([]float32, Partitions*peChunk)
	}
	var movs, outs [Partitions][]byte
	for k := range t.rows {
		if movs[k], err = src.part(mem, k, false); err != nil {
			return false, err
		}
		pe.mc[k] = newCursor(mm.Src.t4(), src)
	}
	for m := range t.cols {
		if outs[m], err = dst.part(mem, m, true); err != nil {
			return false, err
		}
		pe.dc[m] = newCursor(mm.Dst.t4(), dst)
	}
	in, f32 := &dtypes[mm.InDtype], &dtypes[DtypeFP32]
	start := mm.Accum&AccumStart != 0
	tk := r.ticker()
	for n0 := int64(0); n0 < n; n0 += peChunk {
		w := int(min(peChunk, n-n0))
		acc := pe.acc[:t.cols*w]
		clear(acc)
		for k := range t.rows {
			row, c := movs[k], &pe.mc[k]
			ws := t.w[k*Partitions : k*Partitions+t.cols]
			for j := range w {
				if tk.tick() {
					return true, nil
				}
				x := in.load(row[c.off:])
				c.next()
				for m, wm := range ws {
					acc[m*w+j] += wm * x
				}
			}
		}
		for m := range t.cols {
			b, c := outs[m], &pe.dc[m]
			for j := range w {
				v := acc[m*w+j]
				if !start {
					v += f32.load(b[c.off:])
				}
				f32.store(b[c.off:], v)
				c.next()
			}
		}
	}
	return false, nil
}
