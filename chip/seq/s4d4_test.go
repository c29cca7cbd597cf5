package seq

import (
	"errors"
	"math"
	"testing"
)

// seq4 is a 4-D pattern of n contiguous elements.
func seq4(a uint32, n uint16) Tensor4D {
	return Tensor4D{Start: a, Step: [4]int16{1, 0, 0, 0}, Num: [4]uint16{n, 1, 1, 1}}
}

// COPY moves bits: NaN payloads, signed zeros and fp8 bytes come out as
// they went in, through a 4-D pattern that reverses a 2x2x2x2 block.
func TestCopyBitExact(t *testing.T) {
	c := newCore(t)
	words := []uint32{0x7FC0_1234, 0xFFA0_0001, 0x8000_0000, 0x7F80_0000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x7F80_0001}
	for p := range 2 {
		c.put32s(SBUF, 64+p, 0, words...)
	}
	s := S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2,
		Src: Tensor4D{Start: Addr(SBUF, 64, 0), Step: [4]int16{1, 2, 4, 8}, Num: [4]uint16{2, 2, 2, 2}},
		Dst: Tensor4D{Start: Addr(SBUF, 64, 0x100+60), Step: [4]int16{-1, -2, -4, -8}, Num: [4]uint16{2, 2, 2, 2}}}
	if r := c.run1(POOL, NewS4D4(OpCopy, s)); r.State != Halted || c.seqs[POOL].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p := range 2 {
		got := c.get32s(SBUF, 64+p, 0x100, 16)
		for i := range words {
			if got[15-i] != words[i] {
				t.Errorf("partition %d [%d] = %#x, want %#x", p, 15-i, got[15-i], words[i])
			}
		}
	}
	// fp8 has no arithmetic here, but a copy of it is a byte move.
	b, _ := c.mem.Partition(SBUF, 0, 0, 0x100, true)
	copy(b, []byte{0x7F, 0x80, 0xFF, 0x01})
	s = S4D4{InDtype: DtypeFP8E4, OutDtype: DtypeFP8E4, Channels: 1, Src: seq4(0, 4), Dst: seq4(0x40, 4)}
	if r := c.run1(ACT, NewS4D4(OpCopy, s)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	if string(b[0x40:0x44]) != string(b[:4]) {
		t.Errorf("fp8 copy % x", b[0x40:0x44])
	}
}

// CAST goes through fp32: float targets round to nearest even, integer
// targets truncate toward zero and saturate. The reference is exact
// (float64), so the tolerance is 0.
func TestCast(t *testing.T) {
	in := []float32{1.5, -1.5, 2.7, -2.7, 1e10, -1e10, float32(math.NaN()), 0.33333334, 65520, 1.00390625}
	cases := []struct {
		out  Dtype
		want func(x float64) float64
	}{
		{DtypeInt32, func(x float64) float64 { return clampTrunc(x, math.MinInt32, math.MaxInt32) }},
		{DtypeInt8, func(x float64) float64 { return clampTrunc(x, -128, 127) }},
		{DtypeUint16, func(x float64) float64 { return clampTrunc(x, 0, 65535) }},
		{DtypeBF16, nil},
		{DtypeFP16, nil},
	}
	for _, tc := range cases {
		c := newCore(t)
		c.put32s(SBUF, 3, 0, fp32s(in...)...)
		s := S4D4{InDtype: DtypeFP32, OutDtype: tc.out, Channels: 1, Src: seq4(Addr(SBUF, 3, 0), uint16(len(in))), Dst: seq4(Addr(SBUF, 3, 0x100), uint16(len(in)))}
		if r := c.run1(ACT, NewS4D4(OpCast, s)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
			t.Fatalf("%v: %+v", tc.out, r)
		}
		b, _ := c.mem.Partition(SBUF, 3, 0x100, 0x200, false)
		w := dtypes[tc.out].size
		for i, x := range in {
			got := dtypes[tc.out].load(b[uint32(i)*w:])
			var want float32
			switch tc.out {
			case DtypeBF16:
				want = rneBF16(x)
			case DtypeFP16:
				want = rneFP16(x)
			default:
				want = float32(tc.want(float64(x)))
			}
			if got != want && !(got != got && want != want) {
				t.Errorf("%v(%v) = %v, want %v", tc.out, x, got, want)
			}
		}
	}
}

func clampTrunc(x, lo, hi float64) float64 {
	if x != x {
		return 0
	}
	return math.Max(lo, math.Min(hi, math.Trunc(x)))
}

// rneBF16 rounds x to bfloat16 by its definition: the nearest value of
// 8 significant bits, ties to even (x finite, normal).
func rneBF16(x float32) float32 { return roundSig(x, 8, 1e38) }

// rneFP16 is the same for IEEE half (11 bits); beyond 65520 it is Inf.
func rneFP16(x float32) float32 { return roundSig(x, 11, 65520) }

func roundSig(x float32, bits int, inf float64) float32 {
	v := float64(x)
	if v != v {
		return x
	}
	if math.Abs(v) >= inf {
		return float32(math.Copysign(math.Inf(1), v))
	}
	if v == 0 {
		return x
	}
	_, e := math.Frexp(v)
	q := math.Ldexp(1, e-bits)
	return float32(math.RoundToEven(v/q) * q)
}

// RECIPROCAL is 1/x in fp32: within one fp32 rounding of the exact
// quotient (tolerance 0 against float32(1/x)).
func TestReciprocal(t *testing.T) {
	c := newCore(t)
	in := []float32{3, -7, 0.1, 0, float32(math.Inf(-1)), 1e-3}
	c.put32s(SBUF, 0, 0, fp32s(in...)...)
	s := S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Src: seq4(0, 6), Dst: seq4(Addr(PSUM, 0, 0), 6)}
	if r := c.run1(DVE, NewS4D4(OpReciprocal, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	got := c.get32s(PSUM, 0, 0, 6)
	for i, x := range in {
		want := float32(1 / float64(x))
		if g := math.Float32frombits(got[i]); g != want {
			t.Errorf("1/%v = %v, want %v", x, g, want)
		}
	}
}

// The copy and cast validators' rules stop the engine.
func TestMoveValidation(t *testing.T) {
	base := S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Src: seq4(0, 4), Dst: seq4(0x40, 4)}
	bad := map[string]func(*S4D4, *Opcode){
		"copy casts":    func(s *S4D4, _ *Opcode) { s.OutDtype = DtypeBF16 },
		"op":            func(s *S4D4, _ *Opcode) { s.Op = ALUAdd },
		"op_dim":        func(s *S4D4, op *Opcode) { *op, s.OpDim = OpCast, SubdimXY },
		"negated":       func(s *S4D4, op *Opcode) { *op, s.Negated = OpReciprocal, 1 },
		"mask":          func(s *S4D4, _ *Opcode) { s.MaskEnable = 1 },
		"reserved":      func(s *S4D4, _ *Opcode) { s.Reserved[4] = 1 },
		"counts":        func(s *S4D4, op *Opcode) { *op, s.Dst.Num[3] = OpCast, 2 },
		"int64":         func(s *S4D4, op *Opcode) { *op, s.OutDtype = OpCast, DtypeInt64 },
		"fp32r in":      func(s *S4D4, op *Opcode) { *op, s.InDtype = OpCast, DtypeFP32R },
		"zero count":    func(s *S4D4, _ *Opcode) { s.Src.Num[2], s.Dst.Num[2] = 0, 0 },
		"past the SBUF": func(s *S4D4, _ *Opcode) { s.Dst.Start = testSBUFActive - 8 },
	}
	for name, mod := range bad {
		c := newCore(t)
		s, op := base, OpCopy
		mod(&s, &op)
		r := c.run1(DVE, NewS4D4(op, s))
		if r.State != Faulted || !(errors.Is(r.Fault, ErrOperand) || errors.Is(r.Fault, ErrAperture)) {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
