package seq

import "fmt"

// TENSOR_REDUCE_ARITH (0x42) on S4D4_TR: on each partition, the source
// pattern's op_dim innermost dimensions fold, in order, into one element
// (dim 0 innermost, G-DV1 in docs/isa.md); the outer dimensions' elements
// land at the destination pattern's consecutive elements. The fold runs
// in fp32 from the first element (G-DV2); negated multiplies the result
// by −1 (59979245665, 59865941088 §4, 59670186465).

// validReduce applies is_valid_tensor_reduce's rules: a general
// arithmetic op (or the integer band, counted), op_dim X..XYZW, negated
// 0 or 1, mask_enable and reserved zero, and as many destination
// elements as the source has outside the reduced dimensions.
func (s *S4D4) validReduce() error {
	if err := validDtypes(s.Channels, s.OutDtype, true, s.InDtype); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: TENSOR_REDUCE: "+format, append([]any{ErrOperand}, a...)...)
	}
	_, general := tsOps[s.Op]
	switch k := s.OpDim.dims(); {
	case s.Op == aluRsqrt || !general && !(s.Op >= 0xC4 && s.Op <= 0xDD):
		return bad("op %v", s.Op.tsName())
	case k == 0:
		return bad("op_dim %d", s.OpDim)
	case s.Negated > 1 || s.MaskEnable != 0 || s.Reserved != [5]byte{}:
		return bad("negated %d, mask_enable %d, reserved % x", s.Negated, s.MaskEnable, s.Reserved)
	case s.Src.elems()/s.Src.reduced(k) != s.Dst.elems(): // the reduced dims divide the count
		return bad("%d source elements reduce over %d, %d destination elements", s.Src.elems(), s.Src.reduced(k), s.Dst.elems())
	}
	return nil
}

// reduced is how many elements the k innermost dimensions hold.
func (t Tensor4D) reduced(k int) uint64 {
	n := uint64(1)
	for d := range k {
		n *= uint64(t.Num[d])
	}
	return n
}

// tensorReduce runs a TENSOR_REDUCE_ARITH record.
func (r *run) tensorReduce(rec *Record) (skipped string, stopped bool, err error) {
	s := rec.S4D4()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := s.validReduce(); err != nil {
		return "", false, err
	}
	o, ok, err := r.placeS4D4(&s, mem)
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	}
	in, out, f := &dtypes[s.InDtype], &dtypes[s.OutDtype], tsOps[s.Op].f
	switch {
	case in.load == nil:
		return s.InDtype.String(), false, nil
	case out.store == nil:
		return s.OutDtype.String(), false, nil
	case f == nil:
		return s.Op.tsName(), false, nil
	}
	group := s.Src.reduced(s.OpDim.dims())
	neg := s.Negated == 1
	tk := r.ticker()
	for p := range int(s.Channels) {
		sb, err := o[0].pl.part(mem, p, false)
		if err != nil {
			return "", false, err
		}
		db, err := o[1].pl.part(mem, p, true)
		if err != nil {
			return "", false, err
		}
		sc, dc := newCursor(o[0].t, o[0].pl), newCursor(o[1].t, o[1].pl)
		for range o[1].t.elems() {
			if tk.tick() { // a group of one element is still an element
				return "", true, nil
			}
			acc := in.load(sb[sc.off:])
			sc.next()
			for i := uint64(1); i < group; i++ {
				if tk.tick() {
					return "", true, nil
				}
				acc = f(acc, in.load(sb[sc.off:]))
				sc.next()
			}
			if neg {
				acc = -acc
			}
			out.store(db[dc.off:], acc)
			dc.next()
		}
	}
	return "", false, nil
}
