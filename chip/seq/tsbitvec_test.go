package seq

import (
	"errors"
	"math"
	"testing"
)

// newCoreGen is newCore with engines of generation g.
func newCoreGen(t *testing.T, g Generation) *core {
	c := newCore(t)
	for e := range Engine(NumEngines) {
		c.seqs[e] = New(Config{Engine: e, Sync: &c.words, Notify: func(n Notification) { c.notes <- n }, YieldEvery: 64, OnChip: c.mem, Gen: g})
	}
	return c
}

// The tensor-scalar ops added on top of the compares, each against a
// float64 reference rounded once to fp32: every one is a single fp32
// operation (or exact), so the tolerance is 0. The one-operand ops
// ignore the scalar (guessed, G-TS1); the V4-only ones run on V4.
func TestTensorScalarMoreOps(t *testing.T) {
	xs := []float32{3, -4, 0, 0.25, -7.5, 16}
	const s = 2.5
	b2 := func(b bool) float64 { return b2f64(b) }
	cases := []struct {
		op  ALUOp
		ref func(x, y float64) float64
	}{
		{0x0D, func(x, y float64) float64 { return b2(x != 0 && y != 0) }}, // logical_and
		{0x0E, func(x, y float64) float64 { return b2(x != 0 || y != 0) }}, // logical_or
		{0x0F, func(x, y float64) float64 { return b2((x != 0) != (y != 0)) }},
		{0x19, func(x, _ float64) float64 { return math.Abs(x) }},
		{0x20, func(x, y float64) float64 { return math.Max(math.Abs(x), math.Abs(y)) }},
		{0x21, func(x, y float64) float64 { return math.Min(math.Abs(x), math.Abs(y)) }},
		{0x22, func(x, _ float64) float64 { return math.Max(x, 0) }},
		{0x23, func(x, _ float64) float64 { return x * x }},
	}
	for _, tc := range cases {
		for _, rev := range []RevOps{RevNone, RevFirst} {
			c := newCoreGen(t, GenV4)
			c.put32s(SBUF, 0, 0, fp32s(xs...)...)
			ts := TensorScalar{Src: contiguous(0, 6), Dst: contiguous(0x100, 6), InDtype: DtypeFP32, OutDtype: DtypeFP32,
				Channels: 1, Op0: tc.op, Imm0: FP32(s), Reverse: rev}
			if r := c.run1(DVE, NewTensorScalar(ts)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
				t.Fatalf("%v: %+v", tc.op.tsName(), r)
			}
			for i, g := range c.get32s(SBUF, 0, 0x100, 6) {
				x, y := float64(xs[i]), float64(s)
				if rev == RevFirst {
					x, y = y, x
				}
				if want := float32(tc.ref(x, y)); math.Float32frombits(g) != want {
					t.Errorf("%v rev %d: %v, %v = %v, want %v", tc.op.tsName(), rev, x, y, math.Float32frombits(g), want)
				}
			}
		}
	}
	// RSQRT runs alone, without immediates: 1/sqrt rounded once.
	c := newCore(t)
	c.put32s(SBUF, 0, 0, fp32s(4, 2, 0.01)...)
	ts := TensorScalar{Src: contiguous(0, 3), Dst: contiguous(0x100, 3), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Op0: aluRsqrt}
	if r := c.run1(DVE, NewTensorScalar(ts)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("rsqrt: %+v", r)
	}
	for i, x := range []float64{4, 2, float64(float32(0.01))} {
		if g, want := math.Float32frombits(c.get32s(SBUF, 0, 0x100, 3)[i]), float32(1/math.Sqrt(x)); g != want {
			t.Errorf("rsqrt(%v) = %v, want %v", x, g, want)
		}
	}
}

// The bitvec forms on raw integer bits, with inline, pointer and
// register-pointer scalars, and the PTR opcodes reading both scalars
// through pointers; two partitions, each pointer scalar its own.
func TestTensorScalarBitvec(t *testing.T) {
	type tc struct {
		op       Opcode
		d        Dtype
		op0, op1 ALUOp
		rev      RevOps
		src      ImmSrc // both scalars' source (the PTR forms: 0)
		x        uint64
		k0, k1   [2]uint64 // per partition (inline: partition 0's)
		want     [2]uint64
	}
	cases := []tc{
		{OpTensorScalarBitvec, DtypeUint32, aluAnd, aluOr, RevNone, ImmInline, 0xF0F0_1234, [2]uint64{0x0FF0_FFFF, 0x0FF0_FFFF}, [2]uint64{1, 1}, [2]uint64{0x00F0_1235, 0x00F0_1235}},
		{OpTensorScalarBitvec, DtypeInt16, aluASL, aluOr, RevNone, ImmInline, 0x00F0, [2]uint64{8, 8}, [2]uint64{1, 1}, [2]uint64{0xF001, 0xF001}},
		{OpTensorScalarBitvec, DtypeInt32, aluASL, aluASR, RevNone, ImmInline, 0x00F0, [2]uint64{24, 24}, [2]uint64{28, 28}, [2]uint64{0xFFFF_FFFF, 0xFFFF_FFFF}},
		{OpTensorScalarBitvec, DtypeUint8, aluXor, ALUBypass, RevNone, ImmPtr, 0x5A, [2]uint64{0xFF, 0x0F}, [2]uint64{}, [2]uint64{0xA5, 0x55}},
		{OpTensorScalarBitvec, DtypeUint16, aluLSL, ALUBypass, RevFirst, ImmRegPtr, 3, [2]uint64{1, 0x10}, [2]uint64{}, [2]uint64{8, 0x80}},
		{OpTensorScalarBitvec, DtypeUint16, aluNot, ALUBypass, RevNone, ImmInline, 0x00FF, [2]uint64{}, [2]uint64{}, [2]uint64{0xFF00, 0xFF00}},
		{OpTensorScalarPtrBitvec, DtypeInt8, aluOr, aluAnd, RevNone, 0, 0x01, [2]uint64{0x80, 0x40}, [2]uint64{0xC1, 0x0F}, [2]uint64{0x81, 0x01}},
	}
	for _, k := range cases {
		c := newCore(t)
		w := dtypes[k.d].size
		for p := range 2 {
			b, _ := c.mem.Partition(SBUF, p, 0, 0x1000, true)
			storeBits(b[0:], w, k.x)
			storeBits(b[0x40:], w, k.k0[p])
			storeBits(b[0x80:], w, k.k1[p])
		}
		ts := TensorScalar{Src: contiguous(0, 1), Dst: contiguous(0x200, 1), InDtype: k.d, OutDtype: k.d, Channels: 2,
			Op0: k.op0, Op1: k.op1, Reverse: k.rev, Imm0Src: k.src, Imm1Src: k.src, Imm0: 0x40, Imm1: 0x80}
		var pre []*Record
		switch {
		case k.src == ImmInline && k.op == OpTensorScalarBitvec:
			ts.Imm0, ts.Imm1 = uint32(k.k0[0]), uint32(k.k1[0])
		case k.src == ImmRegPtr:
			ts.Imm0, ts.Imm1 = 4, 5
			pre = []*Record{NewALUImm(ALUAdd, 4, 4, 0x40), NewALUImm(ALUAdd, 5, 5, 0x80)}
		}
		rec := NewTensorScalar(ts)
		rec[offOpcode] = byte(k.op)
		if r := c.run1(DVE, append(pre, rec)...); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
			t.Fatalf("%v %v %v: %+v", k.op, k.op0.tsName(), k.d, r)
		}
		for p := range 2 {
			b, _ := c.mem.Partition(SBUF, p, 0, 0x1000, false)
			if g := loadBits(b[0x200:], w); g != k.want[p] {
				t.Errorf("%v %v,%v %v partition %d: %#x, want %#x", k.op, k.op0.tsName(), k.op1.tsName(), k.d, p, g, k.want[p])
			}
		}
	}
}

// TENSOR_SCALAR_PTR_ARITH (0x44) reads both fp32 scalars per partition.
func TestTensorScalarPtrArith(t *testing.T) {
	c := newCore(t)
	for p := range 3 {
		c.put32s(SBUF, p, 0, fp32s(1, 2)...)
		c.put32s(SBUF, p, 0x40, fp32s(float32(p+2))...)
		c.put32s(SBUF, p, 0x80, fp32s(0.5)...)
	}
	ts := TensorScalar{Src: contiguous(0, 2), Dst: contiguous(0x100, 2), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 3,
		Op0: ALUMult, Op1: ALUAdd, Imm0: 0x40, Imm1: 0x80}
	rec := NewTensorScalar(ts)
	rec[offOpcode] = byte(OpTensorScalarPtr)
	if r := c.run1(DVE, rec); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p := range 3 {
		for i, x := range []float32{1, 2} {
			if g, want := math.Float32frombits(c.get32s(SBUF, p, 0x100, 2)[i]), x*float32(p+2)+0.5; g != want {
				t.Errorf("partition %d [%d] = %v, want %v", p, i, g, want)
			}
		}
	}
}

// The bitvec and PTR forms' own rules stop the engine; CRC32 is valid
// but counted.
func TestTensorScalarBitvecValidation(t *testing.T) {
	base := TensorScalar{Src: contiguous(0, 2), Dst: contiguous(0x100, 2), InDtype: DtypeUint16, OutDtype: DtypeUint16, Channels: 1, Op0: aluAnd, Imm0: 0xFF}
	cases := []struct {
		name string
		op   Opcode
		gen  Generation
		f    func(*TensorScalar)
	}{
		{"arith op", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.Op0 = ALUAdd }},
		{"fp32", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.InDtype, ts.OutDtype = DtypeFP32, DtypeFP32 }},
		{"in != out", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.OutDtype = DtypeInt16 }},
		{"u64", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.InDtype, ts.OutDtype = DtypeUint64, DtypeUint64 }},
		{"wide immediate", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.Imm0 = 0x10000 }},
		{"asr on 16 bits", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.Op0, ts.Imm0 = aluASR, 1 }},
		{"shl then shr on 16 bits", OpTensorScalarBitvec, 0, func(ts *TensorScalar) { ts.Op0, ts.Op1 = aluLSL, aluLSR }},
		{"ptr form, imm source 1", OpTensorScalarPtrBitvec, 0, func(ts *TensorScalar) { ts.Imm0Src = ImmPtr }},
		{"ptr arith, imm source 2", OpTensorScalarPtr, 0, func(ts *TensorScalar) {
			ts.InDtype, ts.OutDtype, ts.Op0, ts.Imm0Src = DtypeFP32, DtypeFP32, ALUAdd, ImmRegPtr
		}},
		{"relu on V3", OpTensorScalar, GenV3, func(ts *TensorScalar) { ts.InDtype, ts.OutDtype, ts.Op0 = DtypeFP32, DtypeFP32, 0x22 }},
		{"square on V2", OpTensorScalar, GenV2, func(ts *TensorScalar) { ts.InDtype, ts.OutDtype, ts.Op0 = DtypeFP32, DtypeFP32, 0x23 }},
	}
	for _, k := range cases {
		ts := base
		k.f(&ts)
		c := newCoreGen(t, k.gen)
		rec := NewTensorScalar(ts)
		rec[offOpcode] = byte(k.op)
		if r := c.run1(DVE, rec); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", k.name, r)
		}
	}
	ts := base
	ts.Op0 = aluCRC32
	c := newCore(t)
	rec := NewTensorScalar(ts)
	rec[offOpcode] = byte(OpTensorScalarBitvec)
	if r := c.run1(DVE, rec); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
		t.Errorf("crc32: %+v", r)
	}
}
