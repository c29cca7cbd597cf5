package seq

import "fmt"

// COPY_PREDICATED (0x72) and CAST_PREDICATED (0x99) ride S3S3D3_TT
// (59819273895): src0 is an integer predicate (the dtype pair's low
// nibble), src1 the data (high nibble). Where the predicate element is
// non-zero the data element lands in the destination, copied bit for
// bit (0x72) or cast through fp32 as CAST does (0x99); elsewhere the
// destination keeps what it held (merge, not zero).

const (
	OpCopyPredicated Opcode = 0x72
	OpCastPredicated Opcode = 0x99
)

// validPredicated is is_valid_copy_cast_predicated: op Bypass, an 8-,
// 16- or 32-bit integer predicate, no FP32R or 64-bit dtype, COPY's data
// dtype the output's, equal counts.
func (tt *TensorTensor) validPredicated(op Opcode) error {
	if err := validDtypes(tt.Channels, tt.OutDtype, false, tt.In0, tt.In1); err != nil {
		return err
	}
	switch {
	case tt.OutDtype == DtypeFP32R:
		return fmt.Errorf("%w: %v to fp32r", ErrOperand, op)
	case tt.Op != ALUBypass:
		return fmt.Errorf("%w: %v op %v", ErrOperand, op, tt.Op.tsName())
	case !bitvecDtype(tt.In0):
		return fmt.Errorf("%w: %v predicate dtype %v", ErrOperand, op, tt.In0)
	case op == OpCopyPredicated && tt.In1 != tt.OutDtype:
		return fmt.Errorf("%w: %v %v -> %v", ErrOperand, op, tt.In1, tt.OutDtype)
	case tt.Src0.elems() != tt.Dst.elems() || tt.Src1.elems() != tt.Dst.elems():
		return fmt.Errorf("%w: %v %d, %d source elements, %d destination elements", ErrOperand, op, tt.Src0.elems(), tt.Src1.elems(), tt.Dst.elems())
	}
	return nil
}

// predicated runs COPY_PREDICATED and CAST_PREDICATED.
func (r *run) predicated(rec *Record) (skipped string, stopped bool, err error) {
	op := rec.Opcode()
	tt := rec.TensorTensor()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := tt.validPredicated(op); err != nil {
		return "", false, err
	}
	n := int(tt.Channels)
	var o [3]operand
	ok, err := r.operands(n, mem, []Tensor4D{tt.Src0.t4(), tt.Src1.t4(), tt.Dst.t4()}, []Dtype{tt.In0, tt.In1, tt.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[2], tt.OutDtype)
	}
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	}
	pw := dtypes[tt.In0].size
	if op == OpCopyPredicated || tt.In1 == tt.OutDtype { // the same dtype: a bit-exact move
		w := dtypes[tt.OutDtype].size
		stopped, err = r.zip(n, mem, &o[2], &o[0], &o[1], func(_ int, d, pred, x []byte) {
			if loadBits(pred, pw) != 0 {
				copy(d[:w], x[:w])
			}
		})
		return "", stopped, err
	}
	in, store := dtypes[tt.In1].load, castStore(tt.OutDtype)
	switch {
	case in == nil:
		return tt.In1.String(), false, nil
	case store == nil:
		return tt.OutDtype.String(), false, nil
	}
	stopped, err = r.zip(n, mem, &o[2], &o[0], &o[1], func(_ int, d, pred, x []byte) {
		if loadBits(pred, pw) != 0 {
			store(d, in(x))
		}
	})
	return "", stopped, err
}

// castStore is how CAST stores a float into d: floats round to nearest
// even, integers truncate toward zero (conv.go).
func castStore(d Dtype) func([]byte, float32) {
	if integer(d) {
		return truncStores[d]
	}
	return dtypes[d].store
}
