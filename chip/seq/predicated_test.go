package seq

import (
	"errors"
	"math"
	"testing"

	"github.com/neuronfs/neuronfs/internal/halffloat"
)

// COPY_PREDICATED moves the data's bits (NaN payloads included) where
// the int8 predicate is non-zero (negative counts) and leaves the
// destination's old words elsewhere; on two partitions.
func TestCopyPredicated(t *testing.T) {
	c := newCore(t)
	data := []uint32{0x7FC0_1234, 0xFFA0_0001, 0x8000_0000, 5, 0x7F80_0001, 7}
	pred := []byte{1, 0, 0xFF, 0, 2, 0}
	for p := range 2 {
		c.put32s(SBUF, 8+p, 0x100, data...)
		c.put32s(SBUF, 8+p, 0x200, 0xDEAD, 0xDEAD, 0xDEAD, 0xDEAD, 0xDEAD, 0xDEAD)
		b, _ := c.mem.Partition(SBUF, 8+p, 0, 0x100, true)
		copy(b, pred)
	}
	tt := TensorTensor{In0: DtypeInt8, In1: DtypeFP32, OutDtype: DtypeFP32, Channels: 2,
		Src0: contiguous(Addr(SBUF, 8, 0), 6), Src1: contiguous(Addr(SBUF, 8, 0x100), 6), Dst: contiguous(Addr(SBUF, 8, 0x200), 6)}
	if r := c.run1(DVE, NewTensorTensor(OpCopyPredicated, tt)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p := range 2 {
		for i, g := range c.get32s(SBUF, 8+p, 0x200, 6) {
			want := uint32(0xDEAD)
			if pred[i] != 0 {
				want = data[i]
			}
			if g != want {
				t.Errorf("partition %d [%d] = %#x, want %#x", p, i, g, want)
			}
		}
	}
}

// CAST_PREDICATED converts through fp32 where the uint16 predicate is
// set: to bf16 rounding to nearest even, to int16 truncating toward
// zero (as CAST does). References are exact, tolerance 0.
func TestCastPredicated(t *testing.T) {
	xs := []float32{1.00390625, 1.01171875, -2.7, 70000, 3.5, -1e-3}
	pred := []uint16{1, 1, 0x8000, 1, 0, 1}
	for _, out := range []Dtype{DtypeBF16, DtypeInt16} {
		c := newCore(t)
		c.put32s(SBUF, 0, 0x100, fp32s(xs...)...)
		b, _ := c.mem.Partition(SBUF, 0, 0, 0x1000, true)
		for i, v := range pred {
			le.PutUint16(b[2*i:], v)
			le.PutUint16(b[0x200+2*i:], 0xBEEF)
		}
		tt := TensorTensor{In0: DtypeUint16, In1: DtypeFP32, OutDtype: out, Channels: 1,
			Src0: contiguous(0, 6), Src1: contiguous(0x100, 6), Dst: contiguous(0x200, 6)}
		if r := c.run1(DVE, NewTensorTensor(OpCastPredicated, tt)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
			t.Fatalf("%v: %+v", out, r)
		}
		for i, x := range xs {
			want := uint16(0xBEEF)
			switch {
			case pred[i] == 0:
			case out == DtypeBF16:
				want = halffloat.FloatToBF16(x)
			default:
				want = uint16(int16(max(min(math.Trunc(float64(x)), math.MaxInt16), math.MinInt16)))
			}
			if g := le.Uint16(b[0x200+2*i:]); g != want {
				t.Errorf("%v [%d] %v = %#x, want %#x", out, i, x, g, want)
			}
		}
	}
	// RNE: 1.00390625 lies halfway between two bf16 values; even wins.
	if halffloat.FloatToBF16(1.00390625) != 0x3F80 {
		t.Fatal("the bf16 reference does not round to even")
	}
}

// The predicated records' own rules stop the engine.
func TestPredicatedValidation(t *testing.T) {
	base := TensorTensor{In0: DtypeInt32, In1: DtypeFP32, OutDtype: DtypeFP32, Channels: 1,
		Src0: contiguous(0, 4), Src1: contiguous(0x40, 4), Dst: contiguous(0x80, 4)}
	cases := map[string]struct {
		op Opcode
		f  func(*TensorTensor)
	}{
		"op add":          {OpCopyPredicated, func(tt *TensorTensor) { tt.Op = ALUAdd }},
		"fp32 predicate":  {OpCopyPredicated, func(tt *TensorTensor) { tt.In0 = DtypeFP32 }},
		"u64 predicate":   {OpCastPredicated, func(tt *TensorTensor) { tt.In0 = DtypeUint64 }},
		"copy changes":    {OpCopyPredicated, func(tt *TensorTensor) { tt.OutDtype = DtypeBF16 }},
		"fp32r out":       {OpCastPredicated, func(tt *TensorTensor) { tt.OutDtype = DtypeFP32R }},
		"counts":          {OpCastPredicated, func(tt *TensorTensor) { tt.Src0.Num[0] = 3 }},
		"no channels":     {OpCopyPredicated, func(tt *TensorTensor) { tt.Channels = 0 }},
		"bf16 into PSUM":  {OpCastPredicated, func(tt *TensorTensor) { tt.OutDtype, tt.Dst.Start = DtypeBF16, Addr(PSUM, 0, 0) }},
		"misaligned data": {OpCopyPredicated, func(tt *TensorTensor) { tt.Src1.Start = 0x42 }},
	}
	for name, k := range cases {
		tt := base
		k.f(&tt)
		if r := newCore(t).run1(DVE, NewTensorTensor(k.op, tt)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
