package seq

import "fmt"

// TENSOR_REDUCE_ARITH (0x42) on S4D4_TR: on each partition, the source
// pattern's op_dim innermost dimensions fold, in order, into one element
// (dim 0 innermost, G-DV1 in docs/isa.md); the outer dimensions' elements
// land at the destination pattern's consecutive elements. The fold runs
// in fp32 from the first element (G-DV2); negated multiplies the result
// by −1 (59979245665, 59865941088 §4, 59670186465).

// OpTensorReduceBitvec folds the raw bits of integers with a bitvec op.
const OpTensorReduceBitvec Opcode = 0x52

// validReduce applies is_valid_tensor_reduce's rules: a general
// arithmetic op (or the integer band, counted), op_dim X..XYZW, negated
// 0 or 1, mask_enable and reserved zero, and as many destination
// elements as the source has outside the reduced dimensions. The bitvec
// form takes a bitvec op on one 8-, 16- or 32-bit integer dtype in and
// out (the tensor-scalar bitvec rule, carried over: G-DV4).
func (s *S4D4) validReduce(bitvec bool, g Generation) error {
	if err := validDtypes(s.Channels, s.OutDtype, true, s.InDtype); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: TENSOR_REDUCE: "+format, append([]any{ErrOperand}, a...)...)
	}
	_, general := tsOps[s.Op]
	opOK := !bitvec && s.Op != aluRsqrt && (general || s.Op >= 0xC4 && s.Op <= 0xDD) && (g >= GenV4 || !v4Op(s.Op))
	if bitvec {
		opOK = bitvecValid(s.Op) || s.Op == aluCRC32
	}
	switch k := s.OpDim.dims(); {
	case !opOK:
		return bad("op %v", s.Op.tsName())
	case bitvec && (!bitvecDtype(s.InDtype) || s.InDtype != s.OutDtype):
		return bad("bitvec dtypes %v -> %v", s.InDtype, s.OutDtype)
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

// tensorReduce runs a TENSOR_REDUCE record, arithmetic or bitvec.
func (r *run) tensorReduce(rec *Record) (skipped string, stopped bool, err error) {
	bitvec := rec.Opcode() == OpTensorReduceBitvec
	s := rec.S4D4()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := s.validReduce(bitvec, r.generation()); err != nil {
		return "", false, err
	}
	o, ok, err := r.placeS4D4(&s, mem)
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	}
	var fl folder
	if bitvec {
		fl, skipped = bitsFolder(&s)
	} else {
		fl, skipped = arithFolder(&s)
	}
	if skipped != "" {
		return skipped, false, nil
	}
	stopped, err = r.fold(&s, o, mem, fl)
	return "", stopped, err
}

// folder is a reduction's element steps: start a group with its first
// element, fold in each next one, store the result.
type folder struct {
	first, next func(b []byte)
	store       func(d []byte)
}

// arithFolder folds in fp32; negated flips the result's sign.
func arithFolder(s *S4D4) (folder, string) {
	in, out, f := &dtypes[s.InDtype], &dtypes[s.OutDtype], tsOps[s.Op].f
	switch {
	case in.load == nil:
		return folder{}, s.InDtype.String()
	case out.store == nil:
		return folder{}, s.OutDtype.String()
	case f == nil:
		return folder{}, s.Op.tsName()
	}
	var acc float32
	neg := s.Negated == 1
	return folder{
		first: func(b []byte) { acc = in.load(b) },
		next:  func(b []byte) { acc = f(acc, in.load(b)) },
		store: func(d []byte) {
			if neg {
				acc = -acc
			}
			out.store(d, acc)
		},
	}, ""
}

// bitsFolder folds raw bits; negated on bits has no stated meaning, so
// such a record is counted (G-DV4), as is CRC32.
func bitsFolder(s *S4D4) (folder, string) {
	switch {
	case s.Op == aluCRC32:
		return folder{}, "crc32"
	case s.Negated != 0:
		return folder{}, "negated bitvec reduce"
	}
	w, sgn, op := dtypes[s.InDtype].size, signedInt(s.InDtype), s.Op
	var acc uint64
	return folder{
		first: func(b []byte) { acc = loadBits(b, w) },
		next:  func(b []byte) { acc = bitvec(op, acc, loadBits(b, w), w, sgn) },
		store: func(d []byte) { storeBits(d, w, acc) },
	}, ""
}

// fold walks each partition's groups: the op_dim innermost dimensions'
// elements fold, in order, into one destination element.
func (r *run) fold(s *S4D4, o [2]operand, mem OnChip, fl folder) (stopped bool, err error) {
	group := s.Src.reduced(s.OpDim.dims())
	tk := r.ticker()
	for p := range int(s.Channels) {
		sb, err := o[0].pl.part(mem, p, false)
		if err != nil {
			return false, err
		}
		db, err := o[1].pl.part(mem, p, true)
		if err != nil {
			return false, err
		}
		sc, dc := newCursor(o[0].t, o[0].pl), newCursor(o[1].t, o[1].pl)
		for range o[1].t.elems() {
			if tk.tick() { // a group of one element is still an element
				return true, nil
			}
			fl.first(sb[sc.off:])
			sc.next()
			for i := uint64(1); i < group; i++ {
				if tk.tick() {
					return true, nil
				}
				fl.next(sb[sc.off:])
				sc.next()
			}
			fl.store(db[dc.off:])
			dc.next()
		}
	}
	return false, nil
}
