package seq

import (
	"errors"
	"math"
	"testing"
)

// EXPONENTIAL on V4: exp(x − s), s inline or per partition through a
// pointer; x − s is one fp32 subtraction, exp a float64 evaluation
// rounded once: within 1 fp32 ulp of the float64 reference (the
// hardware's PWL table error is not bounded here, G-EXP1).
func TestExponential(t *testing.T) {
	xs := []float32{-3, -0.5, 0, 0.75, 2, 10}
	for _, ptr := range []bool{false, true} {
		c := newCoreGen(t, GenV4)
		for p := range 2 {
			c.put32s(SBUF, 4+p, 0, fp32s(xs...)...)
			c.put32s(SBUF, 4+p, 0x80, FP32(float32(p)+0.5))
		}
		ts := TensorScalar{Src: contiguous(Addr(SBUF, 4, 0), 6), Dst: contiguous(Addr(PSUM, 4, 0), 6), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2, Imm0: FP32(1.5)}
		if ptr {
			ts.Imm0Src, ts.Imm0 = ImmPtr, Addr(SBUF, 4, 0x80)
		}
		if r := c.run1(DVE, withOp(NewTensorScalar(ts), OpExponential)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
			t.Fatalf("%+v", r)
		}
		for p := range 2 {
			s := float32(1.5)
			if ptr {
				s = float32(p) + 0.5
			}
			for i, g := range c.get32s(PSUM, 4+p, 0, 6) {
				want := float32(math.Exp(float64(xs[i] - s)))
				if d := ulps(math.Float32frombits(g), want); d > 1 {
					t.Errorf("ptr %v partition %d exp(%v − %v) = %v, want %v", ptr, p, xs[i], s, math.Float32frombits(g), want)
				}
			}
		}
	}
}

// Not wired before V4: counted there. The validator's rules stop a V4
// engine; the accumulator forms are counted.
func TestExponentialValidation(t *testing.T) {
	base := TensorScalar{Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1}
	c := newCoreGen(t, GenV3)
	if r := c.run1(DVE, withOp(NewTensorScalar(base), OpExponential)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
		t.Errorf("V3: %+v", r)
	}
	for name, f := range map[string]func(*TensorScalar){
		"op0 add":          func(ts *TensorScalar) { ts.Op0 = ALUAdd },
		"reverse":          func(ts *TensorScalar) { ts.Reverse = RevFirst },
		"fp32r in":         func(ts *TensorScalar) { ts.InDtype = DtypeFP32R },
		"u64 in":           func(ts *TensorScalar) { ts.InDtype = DtypeUint64 },
		"zero accumulator": func(ts *TensorScalar) { ts.AccumCmd = AccZero },
		"imm1 set":         func(ts *TensorScalar) { ts.Imm1 = 1 },
		"counts":           func(ts *TensorScalar) { ts.Dst.Num[0] = 3 },
	} {
		ts := base
		f(&ts)
		if r := newCoreGen(t, GenV4).run1(DVE, withOp(NewTensorScalar(ts), OpExponential)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	ts := base
	ts.AccumCmd = AccLoad
	c = newCoreGen(t, GenV4)
	if r := c.run1(DVE, withOp(NewTensorScalar(ts), OpExponential)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
		t.Errorf("load accumulate: %+v", r)
	}
	ts = base
	ts.InDtype, ts.AccumCmd, ts.Src.Num[0], ts.Dst.Num[0] = DtypeBF16, AccAccumulate, 3, 3
	if r := newCoreGen(t, GenV4).run1(DVE, withOp(NewTensorScalar(ts), OpExponential)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
		t.Errorf("odd packed count with the accumulator: %+v", r)
	}
}

// The softmax denominator: EXPONENTIAL with ZeroAccumulate then
// Accumulate leaves each partition's sum of exp(x − max) in the DVE
// accumulator; DVE_READ_ACCUMULATOR writes it, negated on request. The
// sum of n fp32 terms is within n·2⁻²⁴·Σ of the float64 reference.
func TestExponentialAccumulate(t *testing.T) {
	rows := [][]float32{{1, 2, 3, 4}, {-1, 0.5, 0, 2}}
	c := newCoreGen(t, GenV4)
	for p, row := range rows {
		c.put32s(SBUF, p, 0, fp32s(row...)...)
		c.put32s(SBUF, p, 0x40, FP32(4))
	}
	first := TensorScalar{Src: contiguous(0, 2), Dst: contiguous(0x100, 2), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2,
		Imm0Src: ImmPtr, Imm0: 0x40, AccumCmd: AccZeroAccumulate}
	second := first
	second.Src.Start, second.Dst.Start, second.AccumCmd = 8, 0x108, AccAccumulate
	read := func(neg uint8, at uint32) *Record {
		r := NewReadAccumulator(ReadAccumulator{Count: 1, Dtype: DtypeFP32, Negated: neg, Channels: 2, Dst: Tensor1D{Start: at, Step: 1, Num: 1}})
		return withOp(r, OpDveReadAccumulator)
	}
	if r := c.run1(DVE, withOp(NewTensorScalar(first), OpExponential), withOp(NewTensorScalar(second), OpExponential), read(0, 0x200), read(1, 0x204)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p, row := range rows {
		var want float64
		for _, x := range row {
			want += math.Exp(float64(x) - 4)
		}
		got := c.get32s(SBUF, p, 0x200, 2)
		tol := 4 * 0x1p-24 * want
		if g := float64(math.Float32frombits(got[0])); math.Abs(g-want) > tol {
			t.Errorf("partition %d sum %v, want %v ± %g", p, g, want, tol)
		}
		if math.Float32frombits(got[1]) != -math.Float32frombits(got[0]) {
			t.Errorf("partition %d negated %v", p, math.Float32frombits(got[1]))
		}
	}
	// ACT's read-back keeps negated 0.
	bad := NewReadAccumulator(ReadAccumulator{Count: 1, Dtype: DtypeFP32, Negated: 1, Channels: 1, Dst: Tensor1D{Num: 1}})
	if r := newCore(t).run1(ACT, bad); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
		t.Errorf("ACT negated: %+v", r)
	}
}
