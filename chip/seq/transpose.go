package seq

import "fmt"

// STREAM_TRANSPOSE (0x6B) on S4D4_TR (60042155089 §4-5): a 32-element by
// 32-channel tile transpose. Walking each partition's source pattern in
// order, element k of channel c is element e = k mod 32 of tile
// t = k / 32; it lands on channel 32·(c / 32) + e at position 32·t + c mod 32
// of the destination pattern's walk (G-DV3, guessed: the tile order
// along a multi-tile pattern is not given). A destination with fewer
// elements drops the rest (same_or_fewer).

// validTranspose is is_valid_stream_transpose (60042155089 §4.2).
func (s *S4D4) validTranspose() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: STREAM_TRANSPOSE: "+format, append([]any{ErrOperand}, a...)...)
	}
	if err := validDtypes(s.Channels, s.OutDtype, false, s.InDtype); err != nil {
		return err
	}
	switch {
	case s.Reserved != [5]byte{} || s.MaskEnable > 1 || s.Negated != 0:
		return bad("reserved % x, mask_enable %d, negated %d", s.Reserved, s.MaskEnable, s.Negated)
	case s.OutDtype != s.InDtype || s.Op != ALUBypass:
		return bad("%v -> %v, op %v", s.InDtype, s.OutDtype, s.Op.tsName())
	case s.OpDim != SubdimUnused && s.OpDim != SubdimX:
		return bad("op_dim %d", s.OpDim)
	case s.Channels%32 != 0:
		return bad("%d channels, not a multiple of 32", s.Channels)
	case s.Src.elems()%32 != 0 || s.Dst.elems() > s.Src.elems():
		return bad("%d source elements, %d destination elements", s.Src.elems(), s.Dst.elems())
	}
	return nil
}

// offsetAt is the byte offset, inside the bytes place.part returns, of
// element idx of t's walk (dim 0 fastest).
func offsetAt(t Tensor4D, pl place, idx uint64) int64 {
	off := int64(pl.off) - int64(pl.lo)
	for i := range 4 {
		n := uint64(t.Num[i])
		off += int64(idx%n) * int64(t.Step[i]) * int64(pl.size)
		idx /= n
	}
	return off
}

// streamTranspose runs a STREAM_TRANSPOSE record.
func (r *run) streamTranspose(rec *Record) (skipped string, stopped bool, err error) {
	s := rec.S4D4()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := s.validTranspose(); err != nil {
		return "", false, err
	}
	o, ok, err := r.placeS4D4(&s, mem)
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	case s.MaskEnable == 1:
		return "partial-tile mask", false, nil // which lanes it drops is not given
	}
	n, w := int(s.Channels), dtypes[s.InDtype].size
	var dst [Partitions][]byte
	for p := range n {
		if dst[p], err = o[1].pl.part(mem, p, true); err != nil {
			return "", false, err
		}
	}
	dn, tk := o[1].t.elems(), r.ticker()
	for c := range n {
		sb, err := o[0].pl.part(mem, c, false)
		if err != nil {
			return "", false, err
		}
		sc := newCursor(o[0].t, o[0].pl)
		for k := range o[0].t.elems() {
			if tk.tick() {
				return "", true, nil
			}
			if i := k/32*32 + uint64(c%32); i < dn {
				d := offsetAt(o[1].t, o[1].pl, i)
				copy(dst[c/32*32+int(k%32)][d:d+int64(w)], sb[sc.off:])
			}
			sc.next()
		}
	}
	return "", false, nil
}
