package seq

import "fmt"

// The S4D4_TR records (59979245665): one 4-D source pattern, one 4-D
// destination pattern, and the same bytes between them for COPY (0x46),
// CAST (0x47), RECIPROCAL (0x48) and TENSOR_REDUCE (0x42).

const (
	OpTensorReduce Opcode = 0x42
	OpReciprocal   Opcode = 0x48
)

// Subdim is TENSOR_SUBDIM: which innermost dimensions a record reduces
// (59708852410; there is no value 1).
type Subdim uint8

const (
	SubdimUnused Subdim = 0
	SubdimX      Subdim = 2
	SubdimXY     Subdim = 3
	SubdimXYZ    Subdim = 4
	SubdimXYZW   Subdim = 5
)

// dims is how many innermost dimensions d names (0 for UNUSED).
func (d Subdim) dims() int {
	if d < SubdimX || d > SubdimXYZW {
		return 0
	}
	return int(d) - 1
}

// S4D4 is a decoded S4D4_TR record.
type S4D4 struct {
	Src, Dst          Tensor4D
	InDtype, OutDtype Dtype
	Channels          uint8
	Negated           uint8 // TENSOR_REDUCE: 1 multiplies the result by −1
	Op                ALUOp
	OpDim             Subdim
	MaskEnable        uint8
	Reserved          [5]byte
}

// S4D4 decodes r as S4D4_TR.
func (r *Record) S4D4() S4D4 {
	return S4D4{
		Src: r.tensor4D(offTRSrc), Dst: r.tensor4D(offTRDst),
		InDtype: Dtype(r[offTRInDtype]), OutDtype: Dtype(r[offTROutDtype]), Channels: r[offTRChannels],
		Negated: r[offTRNegated], Op: ALUOp(r[offTROp]), OpDim: Subdim(r[offTROpDim]),
		MaskEnable: r[offTRMask], Reserved: [5]byte(r[offTRReserved : offTRReserved+5]),
	}
}

// NewS4D4 lays s out as a record of op.
func NewS4D4(op Opcode, s S4D4) *Record {
	r := NewRecord(op)
	r.putTensor4D(offTRSrc, s.Src)
	r.putTensor4D(offTRDst, s.Dst)
	r[offTRInDtype], r[offTROutDtype], r[offTRChannels] = byte(s.InDtype), byte(s.OutDtype), s.Channels
	r[offTRNegated], r[offTROp], r[offTROpDim], r[offTRMask] = s.Negated, byte(s.Op), byte(s.OpDim), s.MaskEnable
	copy(r[offTRReserved:], s.Reserved[:])
	return r
}

// validMove applies is_valid_copy / is_valid_cast (59979245665 §3.3),
// which RECIPROCAL shares (60172155822): op BYPASS, op_dim UNUSED or X,
// negated, mask_enable and reserved zero, no 64-bit dtypes, FP32R only
// out, equal counts; COPY also wants one dtype on both sides.
func (s *S4D4) validMove(op Opcode) error {
	if err := validDtypes(s.Channels, s.OutDtype, false, s.InDtype); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %v: "+format, append([]any{ErrOperand, op}, a...)...)
	}
	switch {
	case s.Op != ALUBypass:
		return bad("op %v", s.Op.tsName())
	case s.OpDim != SubdimUnused && s.OpDim != SubdimX:
		return bad("op_dim %d", s.OpDim)
	case s.Negated != 0 || s.MaskEnable != 0 || s.Reserved != [5]byte{}:
		return bad("negated %d, mask_enable %d, reserved % x", s.Negated, s.MaskEnable, s.Reserved)
	case op == OpCopy && s.InDtype != s.OutDtype:
		return bad("%v -> %v", s.InDtype, s.OutDtype)
	case s.Src.elems() != s.Dst.elems():
		return bad("%d source elements, %d destination elements", s.Src.elems(), s.Dst.elems())
	}
	return nil
}

// place resolves the record's two patterns; ok is false for an address
// form not followed.
func (r *run) placeS4D4(s *S4D4, mem OnChip) (o [2]operand, ok bool, err error) {
	ok, err = r.operands(int(s.Channels), mem, []Tensor4D{s.Src, s.Dst}, []Dtype{s.InDtype, s.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[1], s.OutDtype)
	}
	return o, ok, err
}

// move runs COPY, CAST and RECIPROCAL.
func (r *run) move(rec *Record) (skipped string, stopped bool, err error) {
	op := rec.Opcode()
	s := rec.S4D4()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := s.validMove(op); err != nil {
		return "", false, err
	}
	o, ok, err := r.placeS4D4(&s, mem)
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	}
	n := int(s.Channels)
	if op == OpCopy {
		if done, stopped, err := r.rows(n, mem, &o[1], &o[0], nil, r.moveRows(op, &s, nil), nil); done {
			return "", stopped, err
		}
		w := dtypes[s.InDtype].size
		stopped, err = r.zip(n, mem, &o[1], &o[0], nil, func(_ int, d, a, _ []byte) { copy(d[:w], a[:w]) })
		return "", stopped, err
	}
	in, out := &dtypes[s.InDtype], &dtypes[s.OutDtype]
	switch {
	case in.load == nil:
		return s.InDtype.String(), false, nil
	case out.store == nil:
		return s.OutDtype.String(), false, nil
	}
	store := out.store
	if integer(s.OutDtype) {
		store = truncStores[s.OutDtype]
	}
	if done, stopped, err := r.rows(n, mem, &o[1], &o[0], nil, r.moveRows(op, &s, store), nil); done {
		return "", stopped, err
	}
	if op == OpReciprocal {
		stopped, err = r.zip(n, mem, &o[1], &o[0], nil, func(_ int, d, a, _ []byte) { store(d, 1/in.load(a)) })
	} else {
		stopped, err = r.zip(n, mem, &o[1], &o[0], nil, func(_ int, d, a, _ []byte) { store(d, in.load(a)) })
	}
	return "", stopped, err
}
