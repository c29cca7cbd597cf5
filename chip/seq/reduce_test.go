package seq

import (
	"errors"
	"math"
	"testing"
)

// TENSOR_REDUCE folds op_dim's innermost dimensions: a 5x3x2x2 source
// (dim 0 innermost) gives 12, 4, 2 or 1 results. The reference is a
// float64 fold; an fp32 fold of n terms is within (n−1)·2^-24·Σ|x| of
// it, the tolerance used.
func TestTensorReduce(t *testing.T) {
	src := Tensor4D{Start: Addr(SBUF, 10, 0), Step: [4]int16{1, 5, 15, 30}, Num: [4]uint16{5, 3, 2, 2}}
	vals := make([]float32, 60)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i)*0.7)) * 3
	}
	cases := []struct {
		op     ALUOp
		dim    Subdim
		neg    uint8
		fold   func(a, b float64) float64
		groups int
	}{
		{ALUAdd, SubdimX, 0, func(a, b float64) float64 { return a + b }, 12},
		{ALUAdd, SubdimXY, 1, func(a, b float64) float64 { return a + b }, 4},
		{ALUMax, SubdimXYZ, 0, math.Max, 2},
		{ALUMin, SubdimXYZW, 1, math.Min, 1},
		{ALUMult, SubdimX, 0, func(a, b float64) float64 { return a * b }, 12},
	}
	for _, tc := range cases {
		c := newCore(t)
		for p := range 2 {
			c.put32s(SBUF, 10+p, 0, fp32s(vals...)...)
		}
		s := S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2, Op: tc.op, OpDim: tc.dim, Negated: tc.neg,
			Src: src, Dst: seq4(Addr(PSUM, 7, 0x20), uint16(tc.groups))}
		if r := c.run1(DVE, NewS4D4(OpTensorReduce, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
			t.Fatalf("%v %d: %+v", tc.op.tsName(), tc.dim, r)
		}
		n := 60 / tc.groups
		for p := range 2 {
			got := c.get32s(PSUM, 7+p, 0x20, tc.groups)
			for g := range tc.groups {
				want, mag := float64(vals[g*n]), math.Abs(float64(vals[g*n]))
				for _, v := range vals[g*n+1 : (g+1)*n] {
					want = tc.fold(want, float64(v))
					mag = math.Max(mag*math.Abs(float64(v)), mag+math.Abs(float64(v)))
				}
				if tc.neg == 1 {
					want = -want
				}
				tol := float64(n) * 0x1p-24 * mag
				if v := float64(math.Float32frombits(got[g])); math.Abs(v-want) > tol {
					t.Errorf("%v op_dim %d partition %d group %d = %v, want %v ± %g", tc.op.tsName(), tc.dim, p, g, v, want, tol)
				}
			}
		}
	}
}

// The reduce validator: op_dim must name dimensions, negated is 0 or 1,
// and the destination holds one element per group.
func TestTensorReduceValidation(t *testing.T) {
	base := S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Op: ALUAdd, OpDim: SubdimX,
		Src: Tensor4D{Start: 0, Step: [4]int16{1, 4, 0, 0}, Num: [4]uint16{4, 2, 1, 1}}, Dst: seq4(0x100, 2)}
	bad := map[string]func(*S4D4){
		"op_dim unused": func(s *S4D4) { s.OpDim = SubdimUnused },
		"op_dim 1":      func(s *S4D4) { s.OpDim = 1 },
		"op_dim 6":      func(s *S4D4) { s.OpDim = 6 },
		"negated 2":     func(s *S4D4) { s.Negated = 2 },
		"rsqrt":         func(s *S4D4) { s.Op = aluRsqrt },
		"divide":        func(s *S4D4) { s.Op = 0x07 },
		"counts":        func(s *S4D4) { s.Dst.Num[0] = 8 },
		"mask":          func(s *S4D4) { s.MaskEnable = 1 },
		"relu on V3":    func(s *S4D4) { s.Op = 0x22 },
	}
	for name, mod := range bad {
		c := newCore(t)
		s := base
		mod(&s)
		if r := c.run1(DVE, NewS4D4(OpTensorReduce, s)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	c := newCore(t)
	s := base
	s.Op = 0xC4 // ADD_INT: valid, not modelled
	if r := c.run1(DVE, NewS4D4(OpTensorReduce, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
		t.Errorf("add_int: %+v", r)
	}
}

// TENSOR_REDUCE_BITVEC folds raw bits: AND, OR and XOR of a 4x2 source
// over X and XY, on 32-, 16- and 8-bit integers, against a fold in Go.
func TestTensorReduceBitvec(t *testing.T) {
	vals := []uint64{0xF0F0_F0F1, 0x0FF0_0FF3, 0xFFFF_0005, 0x1234_5677, 0x8000_0001, 0x0000_FFFF, 0x7FFF_FFFF, 0x0101_0101}
	folds := map[ALUOp]func(a, b uint64) uint64{
		aluAnd: func(a, b uint64) uint64 { return a & b },
		aluOr:  func(a, b uint64) uint64 { return a | b },
		aluXor: func(a, b uint64) uint64 { return a ^ b },
	}
	for op, f := range folds {
		for _, d := range []Dtype{DtypeUint32, DtypeInt16, DtypeUint8} {
			for _, dim := range []Subdim{SubdimX, SubdimXY} {
				c := newCore(t)
				w := dtypes[d].size
				mask := uint64(1)<<(8*w) - 1
				b, _ := c.mem.Partition(SBUF, 3, 0, 0x1000, true)
				for i, v := range vals {
					storeBits(b[uint32(i)*w:], w, v)
				}
				groups := map[Subdim]int{SubdimX: 2, SubdimXY: 1}[dim]
				s := S4D4{InDtype: d, OutDtype: d, Channels: 1, Op: op, OpDim: dim,
					Src: Tensor4D{Start: Addr(SBUF, 3, 0), Step: [4]int16{1, 4, 0, 0}, Num: [4]uint16{4, 2, 1, 1}}, Dst: seq4(Addr(SBUF, 3, 0x100), uint16(groups))}
				if r := c.run1(DVE, NewS4D4(OpTensorReduceBitvec, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
					t.Fatalf("%v %v %d: %+v", op.tsName(), d, dim, r)
				}
				n := 8 / groups
				for g := range groups {
					want := vals[g*n] & mask
					for _, v := range vals[g*n+1 : (g+1)*n] {
						want = f(want, v&mask)
					}
					if got := loadBits(b[0x100+uint32(g)*w:], w); got != want {
						t.Errorf("%v %v op_dim %d group %d = %#x, want %#x", op.tsName(), d, dim, g, got, want)
					}
				}
			}
		}
	}
	// The bitvec form's own rules, and what it counts.
	base := S4D4{InDtype: DtypeInt32, OutDtype: DtypeInt32, Channels: 1, Op: aluOr, OpDim: SubdimX, Src: seq4(0, 4), Dst: seq4(0x100, 1)}
	for name, mod := range map[string]func(*S4D4){
		"arith op":  func(s *S4D4) { s.Op = ALUAdd },
		"fp32":      func(s *S4D4) { s.InDtype, s.OutDtype = DtypeFP32, DtypeFP32 },
		"in != out": func(s *S4D4) { s.OutDtype = DtypeUint32 },
	} {
		s := base
		mod(&s)
		if r := newCore(t).run1(DVE, NewS4D4(OpTensorReduceBitvec, s)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	for name, mod := range map[string]func(*S4D4){
		"crc32":   func(s *S4D4) { s.Op = aluCRC32 },
		"negated": func(s *S4D4) { s.Negated = 1 },
	} {
		s := base
		mod(&s)
		c := newCore(t)
		if r := c.run1(DVE, NewS4D4(OpTensorReduceBitvec, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
