package seq

import (
	"fmt"
	"slices"
)

// The PE's execution: the latched tiles and the records' checks (the
// records themselves are in perecord.go, the product in pemul.go).

// peTile is one latched stationary tile: w[k*Partitions+m] as the MAC
// takes it, bits the element's raw bytes (transpose mode copies them).
type peTile struct {
	rows, cols int
	dtype      Dtype
	w          [Partitions * Partitions]float32
	bits       [Partitions * Partitions]uint32
}

// peState is the PE's state across records and runs: its latched tiles
// by quadrant masks, and scratch reused by every MATMUL.
type peState struct {
	tiles  map[uint16]*peTile // nil entry: the last load there was not emulated
	acc    []float32          // Partitions × peChunk
	mov    []float32          // Partitions × peChunk: the moving chunk in fp32
	w      []float32          // the tile as this MATMUL's fp32_mode rounds it
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

// peDtype is the validators' dtype rule for a PE operand (any valid
// dtype but FP32R), and whether this package multiplies it (peInputs).
func peDtype(d Dtype) (computed bool, err error) {
	if _, ok := d.info(); !ok || d == DtypeFP32R {
		return false, fmt.Errorf("%w: PE dtype %v", ErrOperand, d)
	}
	_, computed = peInputs[d]
	return computed, nil
}

// checkLdWeights applies the validators' rules to an LDWEIGHTS.
func checkLdWeights(w *LdWeights) (computed bool, err error) {
	computed, err = peDtype(w.InDtype)
	switch {
	case err != nil:
		return false, err
	case w.Rows == 0 || w.Rows > Partitions || w.Cols == 0 || w.Cols > Partitions:
		return false, fmt.Errorf("%w: LDWEIGHTS %d rows, %d columns", ErrOperand, w.Rows, w.Cols)
	case !quadrants(w.RowGrp) || !quadrants(w.ColGrp):
		return false, fmt.Errorf("%w: LDWEIGHTS row_grp %#x, col_grp %#x", ErrOperand, w.RowGrp, w.ColGrp)
	}
	return computed, nil
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
	computed, err := checkLdWeights(&w)
	if err != nil {
		return "", false, err
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
	case w.PerfOpt != 0 || w.BgXpose != 0 || w.Flags != 0:
		why = "perf, background transpose or flags mode"
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
	return "", false, t.latch(&w, src, mem)
}

// latch reads the tile; transpose_mode needs nothing more of the load
// (the MATMUL's own byte says how the tile is used, G-PE9).
func (t *peTile) latch(w *LdWeights, src place, mem OnChip) error {
	t.rows, t.cols, t.dtype = int(w.Rows), int(w.Cols), w.InDtype
	in := peInputs[w.InDtype]
	for k := range t.rows {
		b, err := src.part(mem, k, false)
		if err != nil {
			return err
		}
		c := newCursor(w.Src.t4(), src)
		for m := range t.cols {
			e := b[c.off:]
			t.w[k*Partitions+m] = in.load(e)
			t.bits[k*Partitions+m] = rawBits(e, in.size)
			c.next()
		}
	}
	return nil
}

// rawBits is the little-endian element of size bytes at b.
func rawBits(b []byte, size uint32) uint32 {
	switch size {
	case 1:
		return uint32(b[0])
	case 2:
		return uint32(le.Uint16(b))
	}
	return le.Uint32(b)
}

// validAccum is the accumulate byte's legal set {0, 1, 2, 3, 4, 6}.
func validAccum(a uint8) bool { return a <= 6 && a != 5 }

// checkMatmul applies the validators' rules to a MATMUL of generation
// layout l.
func checkMatmul(mm *Matmul, l *peLayout) (computed bool, err error) {
	computed, err = peDtype(mm.InDtype)
	switch {
	case err != nil:
		return false, err
	case !validAccum(mm.Accum):
		return false, fmt.Errorf("%w: MATMUL accumulate flags %#x", ErrOperand, mm.Accum)
	case !quadrants(mm.RowGrp) || !quadrants(mm.ColGrp):
		return false, fmt.Errorf("%w: MATMUL row_grp %#x, col_grp %#x", ErrOperand, mm.RowGrp, mm.ColGrp)
	case !slices.Contains(l.mmOuts, mm.OutDtype):
		return false, fmt.Errorf("%w: MATMUL output %v", ErrOperand, mm.OutDtype)
	case !validFP32Mode(mm.InDtype, mm.FP32Mode):
		return false, fmt.Errorf("%w: MATMUL %v input with fp32_mode %d", ErrOperand, mm.InDtype, mm.FP32Mode)
	case mm.ZeroRegion > 3:
		return false, fmt.Errorf("%w: MATMUL psum_zero_region %d", ErrOperand, mm.ZeroRegion)
	}
	return computed, nil
}

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
	computed, err := checkMatmul(&mm, l)
	if err != nil {
		return "", false, err
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
	dst, ok2, err := r.placeTensor(mm.Dst.t4(), mm.outDtype(t), t.cols, mem)
	switch {
	case err != nil:
		return "", false, err
	case ok2 && dst.g != PSUM:
		return "", false, fmt.Errorf("%w: MATMUL writes %v", ErrOperand, dst.g)
	case !ok1 || !ok2:
		return "indirect address", false, nil
	}
	if why := mm.notEmulated(computed, t); why != "" {
		return why, false, nil
	}
	if mm.Transpose != 0 {
		stopped, err = r.transpose(t, &mm, src, dst, n, mem)
	} else {
		stopped, err = r.multiply(t, &mm, src, dst, n, mem)
	}
	return "", stopped, err
}

// outDtype is what the MATMUL writes to PSUM: in transpose mode the
// tile's own dtype (NKI nc_transpose: the output has the data's dtype),
// otherwise out_dtype, 0 meaning fp32.
func (mm *Matmul) outDtype(t *peTile) Dtype {
	switch {
	case mm.Transpose != 0:
		return t.dtype
	case mm.OutDtype == 0:
		return DtypeFP32
	}
	return mm.OutDtype
}

// notEmulated is why a valid MATMUL is counted rather than computed, ""
// if it is computed.
func (mm *Matmul) notEmulated(computed bool, t *peTile) string {
	switch {
	case !computed:
		return mm.InDtype.String()
	case mm.PerfOpt != 0 || mm.Flags != 0:
		return "perf or flags mode"
	case mm.Transpose != 0:
		return ""
	case t.dtype == DtypeFP32 && fp32Rounds[mm.FP32Mode] == nil,
		mm.InDtype == DtypeFP32 && fp32Rounds[mm.FP32Mode] == nil:
		return fmt.Sprintf("fp32_mode %d", mm.FP32Mode)
	}
	return ""
}
