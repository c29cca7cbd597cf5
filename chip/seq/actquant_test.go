package seq

import (
	"errors"
	"math"
	"testing"
)

// ACTIVATE_QUANTIZE: qscale·f(x·dqscale + bias[p]) + qzero into uint8,
// from fp32 and from int32 inputs, with a bf16 bias per partition. The
// reference evaluates f in float64 and rounds to uint8 (nearest even,
// saturating); tolerance 0 uint8 steps against it (the inputs keep
// every result off a rounding tie).
func TestActivateQuantize(t *testing.T) {
	xs := []float32{-40, -3, 0, 1, 7, 13, 100, 250}
	for _, in := range []Dtype{DtypeFP32, DtypeInt32} {
		for _, fn := range []uint8{0x01, 0x02, 0x05} {
			c := newCore(t)
			for p := range 2 {
				if in == DtypeFP32 {
					c.put32s(SBUF, 40+p, 0, fp32s(xs...)...)
				} else {
					for i, x := range xs {
						c.put32s(SBUF, 40+p, uint32(4*i), uint32(int32(x)))
					}
				}
				c.putBF16(40+p, 0x80, []float32{float32(p) - 0.5}) // -0.5, 0.5
			}
			a := ActivateQuantize{QuantScale: FP32(3), DequantScale: FP32(0.25), QuantZero: FP32(10.2),
				Src: contiguous(Addr(SBUF, 40, 0), 8), Dst: contiguous(Addr(SBUF, 40, 0x100), 8),
				InDtype: in, BiasDtype: DtypeBF16, OutDtype: DtypeUint8, Channels: 2, Func: fn, BiasAddr: Addr(SBUF, 40, 0x80)}
			if r := c.run1(ACT, NewActivateQuantize(a)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
				t.Fatalf("%v %#x: %+v", in, fn, r)
			}
			for p := range 2 {
				b, _ := c.mem.Partition(SBUF, 40+p, 0x100, 0x108, false)
				for i, x := range xs {
					z := float64(float32(x*0.25) + float32(p) - 0.5)
					y := map[uint8]func(float64) float64{0x01: func(z float64) float64 { return z }, 0x02: func(z float64) float64 { return math.Max(z, 0) },
						0x05: func(z float64) float64 { return (1 + math.Tanh(z/2)) / 2 }}[fn](z)
					want := uint8(math.Max(0, math.Min(255, math.RoundToEven(3*float64(float32(y))+float64(float32(10.2))))))
					if b[i] != want {
						t.Errorf("%v %#x partition %d x %v: %d, want %d", in, fn, p, x, b[i], want)
					}
				}
			}
		}
	}
}

// The validator's rules stop the engine; prelu is counted.
func TestActivateQuantizeValidation(t *testing.T) {
	base := ActivateQuantize{QuantScale: FP32(1), DequantScale: FP32(1), Src: contiguous(0, 4), Dst: contiguous(0x40, 4),
		InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeUint8, Channels: 1, Func: 0x02, BiasAddr: 0x80}
	for name, f := range map[string]func(*ActivateQuantize){
		"bf16 in":        func(a *ActivateQuantize) { a.InDtype = DtypeBF16 },
		"fp32 out":       func(a *ActivateQuantize) { a.OutDtype = DtypeFP32 },
		"int8 bias":      func(a *ActivateQuantize) { a.BiasDtype = DtypeInt8 },
		"zero qscale":    func(a *ActivateQuantize) { a.QuantScale = 0 },
		"zero dqscale":   func(a *ActivateQuantize) { a.DequantScale = FP32(float32(math.Copysign(0, -1))) },
		"counts":         func(a *ActivateQuantize) { a.Dst.Num[0] = 3 },
		"no channels":    func(a *ActivateQuantize) { a.Channels = 0 },
		"bias unaligned": func(a *ActivateQuantize) { a.BiasAddr = 0x82 },
	} {
		a := base
		f(&a)
		if r := newCore(t).run1(ACT, NewActivateQuantize(a)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	a := base
	a.Func = 0x04
	c := newCore(t)
	if r := c.run1(ACT, NewActivateQuantize(a)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 1 {
		t.Errorf("prelu: %+v", r)
	}
}
