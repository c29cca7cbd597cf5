package seq

import (
	"fmt"
	"math"
)

// EXPONENTIAL (0x30) rides S3D3_TS (59896205802): on each partition,
// every source element x becomes exp(x − imm0) in the destination. The
// ops are forced BYPASS and reverse NONE (the exp is the opcode's own);
// that imm0 is subtracted is inferred from the simulator's exp(in − max)
// (59891156191), G-EXP1. Only MARIANA (V4) and later wire it: on an
// earlier core it is counted. Accumulate and ZeroAccumulate also fold
// each partition's outputs into the engine's accumulator, as ACTIVATE's
// do (the simulator shares that step, 59891156191 §1), which
// DVE_READ_ACCUMULATOR reads; LoadAccumulate is counted.

// validExp is is_valid_exponential (59896205802 §4b-4c).
func (ts *TensorScalar) validExp() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: EXPONENTIAL: "+format, append([]any{ErrOperand}, a...)...)
	}
	if err := validDtypes(ts.Channels, ts.OutDtype, false, ts.InDtype); err != nil {
		return err
	}
	accOK := ts.AccumCmd == AccLoad ||
		(ts.AccumCmd == AccIdle || ts.AccumCmd == AccAccumulate || ts.AccumCmd == AccZeroAccumulate) && ts.Imm1Src == ImmInline && ts.Imm1 == 0
	switch {
	case ts.Op0 != ALUBypass || ts.Op1 != ALUBypass || ts.Reverse != RevNone:
		return bad("ops %v, %v, reverse %d", ts.Op0.tsName(), ts.Op1.tsName(), ts.Reverse)
	case ts.Imm0Src > ImmRegPtr || ts.Imm1Src > ImmRegPtr:
		return bad("imm sources %d, %d", ts.Imm0Src, ts.Imm1Src)
	case !accOK:
		return bad("accumulator_cmd %d with imm1 %#x from %d", ts.AccumCmd, ts.Imm1, ts.Imm1Src)
	case ts.Src.elems() != ts.Dst.elems():
		return bad("%d source elements, %d destination elements", ts.Src.elems(), ts.Dst.elems())
	case ts.AccumCmd != AccIdle && !ts.expEven():
		return bad("an odd inner count of packed %v with the accumulator", ts.InDtype)
	}
	return nil
}

// expEven is exp_x_even_or_unpacked (§4d): with the accumulator engaged,
// a packed (16- or 8-bit) input walked at unit step needs an even inner
// count. The companion rule on the upper dimensions is not given in
// full and is not checked.
func (ts *TensorScalar) expEven() bool {
	unpacked := ts.InDtype == DtypeFP32 || ts.InDtype == DtypeInt32 || ts.InDtype == DtypeUint32
	return unpacked || ts.Src.Step[0] != 1 || ts.Src.Num[0]%2 == 0
}

// exponential runs an EXPONENTIAL record.
func (r *run) exponential(rec *Record) (skipped string, stopped bool, err error) {
	if g := r.generation(); g < GenV4 {
		return fmt.Sprintf("EXPONENTIAL on generation %d", g), false, nil
	}
	ts := rec.TensorScalar()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := ts.validExp(); err != nil {
		return "", false, err
	}
	n := int(ts.Channels)
	var o [2]operand
	ok, err := r.operands(n, mem, []Tensor4D{ts.Src.t4(), ts.Dst.t4()}, []Dtype{ts.InDtype, ts.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[1], ts.OutDtype)
	}
	var s scalar
	if err == nil {
		err = r.resolveScalarOf(&s, ts.Imm0Src, ts.Imm0, DtypeFP32, n, mem)
	}
	in, out := dtypes[ts.InDtype].load, dtypes[ts.OutDtype].store
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	case ts.AccumCmd == AccLoad:
		return "LoadAccumulate", false, nil
	case in == nil:
		return ts.InDtype.String(), false, nil
	case out == nil:
		return ts.OutDtype.String(), false, nil
	}
	if r.act == nil {
		r.act = new(actState)
	}
	acc := accumulator{st: r.act, cmd: ts.AccumCmd, lane: o[0].pl.p0, last: -1}
	var serr error
	k := perPartition(func(p int) (float32, error) { return s.at(mem, p) }, &serr)
	stopped, err = r.zip(n, mem, &o[1], &o[0], nil, func(p int, d, x, _ []byte) {
		if p != acc.last {
			acc.flush()
			acc.last, acc.sum = p, 0
		}
		y := float32(math.Exp(float64(in(x) - k(p))))
		acc.sum += y
		out(d, y)
	})
	if err == nil && !stopped {
		acc.flush()
	}
	if err == nil {
		err = serr
	}
	return "", stopped, err
}
