package seq

import (
	"errors"
	"math"
	"testing"
)

func c2(a uint32, n uint16) Tensor2D {
	return Tensor2D{Start: a, Step: [2]int16{1, 0}, Num: [2]uint16{n, 1}}
}

// SCALAR_TENSOR_TENSOR: (src0 op0 s) op1 src1 with each reverse flag,
// against a float64 reference rounded after each op (two fp32
// operations: the tolerance is 0 against that reference); the scalar
// inline, or per partition through a bf16 pointer.
func TestSTTArith(t *testing.T) {
	a := []float32{1.5, -2, 3.25, 0, 100, -0.5}
	b := []float32{4, 0.5, -1, 7, -3, 2}
	r32 := func(x float64) float64 { return float64(float32(x)) }
	cases := []struct {
		op0, op1 ALUOp
		rev      RevOps
		ref      func(a, s, b float64) float64
	}{
		{ALUMult, ALUAdd, RevNone, func(a, s, b float64) float64 { return r32(r32(a*s) + b) }},
		{ALUSub, ALUSub, RevFirst, func(a, s, b float64) float64 { return r32(r32(s-a) - b) }},
		{ALUSub, ALUSub, RevSecond, func(a, s, b float64) float64 { return r32(b - r32(a-s)) }},
		{ALUSub, ALUMax, RevBoth, func(a, s, b float64) float64 { return math.Max(b, r32(s-a)) }},
		{ALUBypass, ALUMult, RevNone, func(a, _, b float64) float64 { return r32(a * b) }},
		{0x13, ALUBypass, RevNone, func(a, s, _ float64) float64 { return b2f64(a > s) }},
	}
	for _, ptr := range []bool{false, true} {
		for _, tc := range cases {
			c := newCore(t)
			for p := range 2 {
				c.put32s(SBUF, 20+p, 0, fp32s(a...)...)
				c.put32s(SBUF, 20+p, 0x40, fp32s(b...)...)
				bb, _ := c.mem.Partition(SBUF, 20+p, 0, 0x100, true)
				le.PutUint16(bb[0x80:], uint16(math.Float32bits(float32(p+2))>>16)) // 2 or 3 in bf16
			}
			s := STT{Src0: c2(Addr(SBUF, 20, 0), 6), Src1: c2(Addr(SBUF, 20, 0x40), 6), Dst: c2(Addr(PSUM, 3, 0), 6),
				Op0: tc.op0, Op1: tc.op1, Reverse: tc.rev, In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 2, Imm0: FP32(2)}
			if ptr {
				s.Imm0Src, s.ImmDtype, s.Imm0 = ImmPtr, DtypeBF16, Addr(SBUF, 20, 0x80)
			}
			if r := c.run1(DVE, NewSTT(OpSTTArith, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
				t.Fatalf("%v,%v: %+v", tc.op0.tsName(), tc.op1.tsName(), r)
			}
			for p := range 2 {
				k := 2.0
				if ptr {
					k = float64(p + 2)
				}
				for i, g := range c.get32s(PSUM, 3+p, 0, 6) {
					if want := float32(tc.ref(float64(a[i]), k, float64(b[i]))); math.Float32frombits(g) != want {
						t.Errorf("%v,%v rev %d ptr %v partition %d [%d] = %v, want %v", tc.op0.tsName(), tc.op1.tsName(), tc.rev, ptr, p, i, math.Float32frombits(g), want)
					}
				}
			}
		}
	}
}

// The bitvec form on raw uint16 bits: (src0 << s) | src1.
func TestSTTBitvec(t *testing.T) {
	c := newCore(t)
	bb, _ := c.mem.Partition(SBUF, 0, 0, 0x100, true)
	for i, v := range []uint16{0x0001, 0x00F0, 0x8001} {
		le.PutUint16(bb[2*i:], v)
		le.PutUint16(bb[0x20+2*i:], 0x0003)
	}
	s := STT{Src0: c2(0, 3), Src1: c2(0x20, 3), Dst: c2(0x40, 3), Op0: aluLSL, Op1: aluOr,
		In0: DtypeUint16, In1: DtypeUint16, OutDtype: DtypeUint16, ImmDtype: DtypeUint16, Channels: 1, Imm0: 4}
	if r := c.run1(DVE, NewSTT(OpSTTBitvec, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for i, want := range []uint16{0x0013, 0x0F03, 0x0013} {
		if g := le.Uint16(bb[0x40+2*i:]); g != want {
			t.Errorf("[%d] = %#x, want %#x", i, g, want)
		}
	}
}

// TENSOR_TENSOR_SCAN: r = (src0 op0 r) op1 src1 from the seed, per
// partition; a running product-plus-sum against a float64 reference
// rounded after each op (tolerance 0 against it).
func TestTensorTensorScan(t *testing.T) {
	a := []float32{0.5, 2, -1, 3, 0.25}
	b := []float32{1, -1, 2, 0.5, 4}
	c := newCore(t)
	for p := range 3 {
		c.put32s(SBUF, p, 0, fp32s(a...)...)
		c.put32s(SBUF, p, 0x40, fp32s(b...)...)
		c.put32s(SBUF, p, 0x80, FP32(float32(p)))
	}
	s := STT{Src0: c2(0, 5), Src1: c2(0x40, 5), Dst: c2(0x100, 5), Op0: ALUMult, Op1: ALUAdd,
		In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 3, Imm0Src: ImmPtr, Imm0: 0x80}
	if r := c.run1(DVE, NewSTT(OpTensorTensorScan, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p := range 3 {
		acc := float64(p)
		for i, g := range c.get32s(SBUF, p, 0x100, 5) {
			acc = float64(float32(float64(float32(float64(a[i])*acc)) + float64(b[i])))
			if math.Float32frombits(g) != float32(acc) {
				t.Errorf("partition %d [%d] = %v, want %v", p, i, math.Float32frombits(g), acc)
			}
		}
	}
}

// The S2S2D2_STT rules stop the engine; what no source gives is counted.
func TestSTTValidation(t *testing.T) {
	base := STT{Src0: c2(0, 4), Src1: c2(0x40, 4), Dst: c2(0x80, 4), Op0: ALUMult, Op1: ALUAdd,
		In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 1}
	bad := map[string]struct {
		op Opcode
		f  func(*STT)
	}{
		"divide":        {OpSTTArith, func(s *STT) { s.Op1 = 0x07 }},
		"rsqrt":         {OpSTTArith, func(s *STT) { s.Op0 = aluRsqrt }},
		"relu on V3":    {OpSTTArith, func(s *STT) { s.Op0 = 0x22 }},
		"inline bf16":   {OpSTTArith, func(s *STT) { s.ImmDtype = DtypeBF16 }},
		"accumulator 1": {OpSTTArith, func(s *STT) { s.AccumCmd = AccZero }},
		"reserved":      {OpSTTArith, func(s *STT) { s.Reserved[2] = 1 }},
		"counts":        {OpSTTArith, func(s *STT) { s.Src1.Num[0] = 3 }},
		"reverse 4":     {OpSTTArith, func(s *STT) { s.Reverse = 4 }},
		"bitvec float":  {OpSTTBitvec, func(s *STT) { s.Op0, s.Op1 = aluAnd, aluOr }},
		"bitvec add":    {OpSTTBitvec, func(s *STT) { s.In0, s.In1, s.OutDtype, s.ImmDtype = DtypeInt32, DtypeInt32, DtypeInt32, DtypeInt32 }},
		"bitvec crc32": {OpSTTBitvec, func(s *STT) {
			s.Op0, s.Op1, s.In0, s.In1, s.OutDtype, s.ImmDtype = aluCRC32, 0, DtypeInt32, DtypeInt32, DtypeInt32, DtypeInt32
		}},
		"scan accumulate": {OpTensorTensorScan, func(s *STT) { s.AccumCmd = AccAccumulate }},
		"imm register 64": {OpSTTArith, func(s *STT) { s.Imm0Src, s.Imm0 = ImmRegPtr, 64 }},
		"int64 src1":      {OpSTTArith, func(s *STT) { s.In1 = DtypeInt64 }},
	}
	for name, k := range bad {
		s := base
		k.f(&s)
		if r := newCore(t).run1(DVE, NewSTT(k.op, s)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	counted := map[string]struct {
		op Opcode
		f  func(*STT)
	}{
		"reversed scan": {OpTensorTensorScan, func(s *STT) { s.Reverse = RevFirst }},
		"fp8":           {OpSTTArith, func(s *STT) { s.In1 = DtypeFP8E4 }},
	}
	for name, k := range counted {
		s := base
		k.f(&s)
		c := newCore(t)
		if r := c.run1(DVE, NewSTT(k.op, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// STT with ZeroAccumulate then Accumulate sums each partition's outputs
// into the DVE accumulator and still writes them (G-DV6): a fused
// multiply-add whose row sums DVE_READ_ACCUMULATOR reads. Sums of n
// fp32 terms: within n·2⁻²⁴·Σ of the float64 reference.
func TestSTTAccumulate(t *testing.T) {
	a, b := []float32{1, 2, 3, 4}, []float32{0.5, -1, 2, 0.25}
	c := newCore(t)
	for p := range 2 {
		c.put32s(SBUF, p, 0, fp32s(a...)...)
		c.put32s(SBUF, p, 0x40, fp32s(b...)...)
	}
	s := STT{Src0: c2(0, 4), Src1: c2(0x40, 4), Dst: c2(0x80, 4), Op0: ALUMult, Op1: ALUAdd,
		In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 2, Imm0: FP32(3), AccumCmd: AccZeroAccumulate}
	again := s
	again.AccumCmd, again.Dst.Start = AccAccumulate, 0xC0
	read := withOp(NewReadAccumulator(ReadAccumulator{Count: 1, Dtype: DtypeFP32, Channels: 2, Dst: Tensor1D{Start: 0x100, Num: 1}}), OpDveReadAccumulator)
	if r := c.run1(DVE, NewSTT(OpSTTArith, s), NewSTT(OpSTTArith, again), read); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	var want float64
	for i := range a {
		want += 2 * (3*float64(a[i]) + float64(b[i]))
	}
	for p := range 2 {
		if g := c.get32s(SBUF, p, 0xC0, 4); math.Float32frombits(g[1]) != 5 {
			t.Errorf("partition %d output [1] = %v, want 5", p, math.Float32frombits(g[1]))
		}
		if g := float64(math.Float32frombits(c.get32s(SBUF, p, 0x100, 1)[0])); math.Abs(g-want) > 8*0x1p-24*want {
			t.Errorf("partition %d sum %v, want %v", p, g, want)
		}
	}
}
