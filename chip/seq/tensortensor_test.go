package seq

import (
	"errors"
	"math"
	"testing"
)

// Each arithmetic op on two fp32 tensors, against a float64 reference
// rounded once to fp32: one fp32 operation is exact to that rounding,
// so the tolerance is 0. src0 is the left operand (the header's order,
// docs/isa.md "Conflicts"): SUB gives src0 − src1.
func TestTensorTensorArith(t *testing.T) {
	a := []float32{5, -2.5, 3, 0, 1e30, -7}
	b := []float32{1, 4, 3, -1, 1e30, 0.5}
	cases := []struct {
		op  ALUOp
		ref func(x, y float64) float64
	}{
		{ALUAdd, func(x, y float64) float64 { return x + y }},
		{ALUSub, func(x, y float64) float64 { return x - y }},
		{ALUMult, func(x, y float64) float64 { return x * y }},
		{ALUMax, math.Max},
		{ALUMin, math.Min},
		{0x13, func(x, y float64) float64 { return b2f64(x > y) }},            // IS_GT
		{0x12, func(x, y float64) float64 { return b2f64(x == y) }},           // IS_EQ
		{0x17, func(x, y float64) float64 { return math.Abs(x - y) }},         // ABS_DIFF
		{0x0E, func(x, y float64) float64 { return b2f64(x != 0 || y != 0) }}, // LOGICAL_OR
		{0x19, func(x, _ float64) float64 { return math.Abs(x) }},             // ABS: src1 unused (G-TS1)
		{aluPow, math.Pow}, // G-TT1
	}
	for _, tc := range cases {
		c := newCore(t)
		for p := range 3 {
			c.put32s(SBUF, 32+p, 0x100, fp32s(a...)...)
			c.put32s(SBUF, 32+p, 0x200, fp32s(b...)...)
		}
		tt := TensorTensor{In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, Op: tc.op, Channels: 3,
			Src0: contiguous(Addr(SBUF, 32, 0x100), 6), Src1: contiguous(Addr(SBUF, 32, 0x200), 6), Dst: contiguous(Addr(PSUM, 1, 0), 6)}
		if r := c.run1(DVE, NewTensorTensor(OpTensorTensor, tt)); r.State != Halted {
			t.Fatalf("%v: %+v", tc.op.tsName(), r)
		}
		if n := c.seqs[DVE].Counts().NotEmulated; n != 0 {
			t.Fatalf("%v: %d not emulated", tc.op.tsName(), n)
		}
		for p := range 3 {
			got := c.get32s(PSUM, 1+p, 0, 6)
			for i := range a {
				want := float32(tc.ref(float64(a[i]), float64(b[i])))
				if g := math.Float32frombits(got[i]); g != want && !(g != g && want != want) { // NaN matches NaN
					t.Errorf("%v partition %d [%d]: %v op %v = %v, want %v", tc.op.tsName(), p, i, a[i], b[i], g, want)
				}
			}
		}
	}
}

func b2f64(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Mixed dtypes: bf16 src0, an int16 src1 broadcast along dim 0 (step
// 0), an int32 output rounded to nearest even.
func TestTensorTensorMixedDtypes(t *testing.T) {
	c := newCore(t)
	b, _ := c.mem.Partition(SBUF, 0, 0, 0x1000, true)
	for i, v := range []float32{1.5, 2.5, -3.5, 100} {
		le.PutUint16(b[2*i:], uint16(math.Float32bits(v)>>16)) // exact in bf16
	}
	le.PutUint16(b[0x80:], 0xFFFE) // int16 -2
	tt := TensorTensor{In0: DtypeBF16, In1: DtypeInt16, OutDtype: DtypeInt32, Op: ALUMult, Channels: 1,
		Src0: contiguous(0, 4), Src1: Tensor3D{Start: 0x80, Num: [3]uint16{4, 1, 1}}, Dst: contiguous(0x100, 4)}
	if r := c.run1(POOL, NewTensorTensor(OpTensorTensor, tt)); r.State != Halted {
		t.Fatalf("%+v", r)
	}
	for i, want := range []int32{-3, -5, 7, -200} {
		if g := int32(le.Uint32(b[0x100+4*i:])); g != want {
			t.Errorf("[%d] = %d, want %d", i, g, want)
		}
	}
}

// The bitvec form works on raw bits: a shift right of a negative int16
// keeps its sign, the logical one does not.
func TestTensorTensorBitvec(t *testing.T) {
	cases := []struct {
		op   ALUOp
		d    Dtype
		a, b uint64
		want uint64
	}{
		{aluAnd, DtypeUint32, 0xF0F0_1234, 0x0FF0_FFFF, 0x00F0_1234},
		{aluOr, DtypeInt8, 0x81, 0x02, 0x83},
		{aluXor, DtypeUint16, 0xFFFF, 0x00FF, 0xFF00},
		{aluNot, DtypeUint16, 0x00FF, 0, 0xFF00},
		{aluLSL, DtypeUint32, 0x8000_0001, 1, 0x2},
		{aluLSR, DtypeInt16, 0x8000, 4, 0x0800},
		{aluASR, DtypeInt16, 0x8000, 4, 0xF800},
		{aluASR, DtypeUint16, 0x8000, 4, 0x0800},
		{aluLSR, DtypeUint32, 0xFFFF_FFFF, 32, 0},
		{aluXor, DtypeUint64, 0xFFFF_0000_FFFF_0000, 0xFFFF_FFFF_0000_0000, 0x0000_FFFF_FFFF_0000},
	}
	for _, tc := range cases {
		c := newCore(t)
		w := dtypes[tc.d].size
		b, _ := c.mem.Partition(SBUF, 5, 0, 0x1000, true)
		storeBits(b[0:], w, tc.a)
		storeBits(b[0x40:], w, tc.b)
		tt := TensorTensor{In0: tc.d, In1: tc.d, OutDtype: tc.d, Op: tc.op, Channels: 1,
			Src0: contiguous(Addr(SBUF, 5, 0), 1), Src1: contiguous(Addr(SBUF, 5, 0x40), 1), Dst: contiguous(Addr(SBUF, 5, 0x80), 1)}
		if r := c.run1(DVE, NewTensorTensor(OpTensorTensorBitvec, tt)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
			t.Fatalf("%v %v: %+v", tc.op.tsName(), tc.d, r)
		}
		if g := loadBits(b[0x80:], w); g != tc.want {
			t.Errorf("%v %v %#x, %#x = %#x, want %#x", tc.op.tsName(), tc.d, tc.a, tc.b, g, tc.want)
		}
	}
}

// A field the validators reject stops the engine; a valid op whose
// effect is not modelled is counted.
func TestTensorTensorValidation(t *testing.T) {
	base := TensorTensor{In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, Op: ALUAdd, Channels: 2,
		Src0: contiguous(0, 4), Src1: contiguous(0x40, 4), Dst: contiguous(0x80, 4)}
	bad := map[string]func(*TensorTensor, *Opcode){
		"rsqrt":        func(tt *TensorTensor, _ *Opcode) { tt.Op = aluRsqrt },
		"argmax":       func(tt *TensorTensor, _ *Opcode) { tt.Op = 0xDE },
		"no channels":  func(tt *TensorTensor, _ *Opcode) { tt.Channels = 0 },
		"fp32r in":     func(tt *TensorTensor, _ *Opcode) { tt.In1 = DtypeFP32R },
		"counts":       func(tt *TensorTensor, _ *Opcode) { tt.Src1.Num[0] = 3 },
		"bitvec float": func(tt *TensorTensor, op *Opcode) { *op, tt.Op = OpTensorTensorBitvec, aluAnd },
		"bitvec add": func(tt *TensorTensor, op *Opcode) {
			*op, tt.In0, tt.In1, tt.OutDtype = OpTensorTensorBitvec, DtypeInt32, DtypeInt32, DtypeInt32
		},
		"bitvec mixed": func(tt *TensorTensor, op *Opcode) {
			*op, tt.Op, tt.In0, tt.In1, tt.OutDtype = OpTensorTensorBitvec, aluOr, DtypeInt32, DtypeInt16, DtypeInt32
		},
		"bf16 into PSUM": func(tt *TensorTensor, _ *Opcode) { tt.OutDtype, tt.Dst.Start = DtypeBF16, Addr(PSUM, 0, 0) },
		"abs_max on V3":  func(tt *TensorTensor, _ *Opcode) { tt.Op = 0x20 },
	}
	for name, mod := range bad {
		c := newCore(t)
		tt, op := base, OpTensorTensor
		mod(&tt, &op)
		r := c.run1(DVE, NewTensorTensor(op, tt))
		if r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
			continue
		}
		if n := c.note(); n.Kind != NotifyError || n.ErrorID != ErrorIDSequencerFatal {
			t.Errorf("%s: %+v", name, n)
		}
	}
	for name, op := range map[string]ALUOp{"add_int": 0xC4, "mod": aluMod} {
		c := newCore(t)
		tt := base
		tt.Op = op
		if r := c.run1(DVE, NewTensorTensor(OpTensorTensor, tt)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%s: %+v, %d not emulated", name, r, c.seqs[DVE].Counts().NotEmulated)
		}
	}
}
