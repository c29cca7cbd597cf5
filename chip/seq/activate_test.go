package seq

import (
	"errors"
	"math"
	"testing"
)

// ulps is how many fp32 steps apart a and b are.
func ulps(a, b float32) float64 {
	if a == b || a != a && b != b {
		return 0
	}
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia < 0x80000000 != (ib < 0x80000000) {
		return math.Inf(1)
	}
	return math.Abs(float64(ia - ib))
}

// Each named function, on f(0.5·x + 0.25), against a float64 reference
// written independently of the emulator's form where one exists: the
// emulator rounds a float64 evaluation once, so it is within 1 fp32 ulp
// of the reference (the hardware's cubic tables are not modelled: their
// error is not bounded here).
func TestActivateFunctions(t *testing.T) {
	xs := []float32{-6, -2.5, -1, -0.3, 0, 0.2, 0.7, 1.5, 3, 9}
	const alpha = 0.2
	refs := map[uint8]func(z float64) float64{
		0x01: func(z float64) float64 { return z },
		0x02: func(z float64) float64 { return max(z, 0) },
		0x03: func(z float64) float64 { return math.Max(z, 0) + 0.01*math.Min(z, 0) },
		0x04: func(z float64) float64 { return math.Max(z, 0) + alpha*math.Min(z, 0) },
		0x05: func(z float64) float64 { return (1 + math.Tanh(z/2)) / 2 },
		0x06: math.Tanh,
		0x07: math.Exp,
		0x08: math.Sqrt,
		0x09: func(z float64) float64 { return math.Log(1 + math.Exp(z)) },
		0x0A: math.Log,
		0x13: math.Sin,
		0x15: math.Erf,
		0x17: func(z float64) float64 { return z * (1 + math.Tanh(z/2)) / 2 },
		0x1C: math.Cos,
		0x1D: func(z float64) float64 { return math.Pow(z, -0.5) },
		0x1E: func(z float64) float64 { return z * z },
		0x1F: func(z float64) float64 { return z * 0.5 * math.Erfc(-z/math.Sqrt2) },
		0x80: func(z float64) float64 { return z },
		0x81: func(z float64) float64 { return math.Pow(z, -1) },
	}
	for code, ref := range refs {
		c := newCore(t)
		c.put32s(SBUF, 50, 0, fp32s(xs...)...)
		a := Activate{BiasSrcN: 1, Src: contiguous(Addr(SBUF, 50, 0), uint16(len(xs))), Dst: contiguous(Addr(PSUM, 50, 0), uint16(len(xs))),
			InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Func: code,
			Scale: FP32(0.5), Bias: FP32(0.25), Imm: FP32(alpha)}
		if r := c.run1(ACT, NewRecord(OpActTableLoad), NewActivate(a)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
			t.Fatalf("%#x: %+v", code, r)
		}
		got := c.get32s(PSUM, 50, 0, len(xs))
		for i, x := range xs {
			z := float32(0.5*x) + 0.25
			want := float32(ref(float64(z)))
			if d := ulps(math.Float32frombits(got[i]), want); d > 1 {
				t.Errorf("%s(%v) = %v, want %v (%v ulps)", actFuncs[code].name, z, math.Float32frombits(got[i]), want, d)
			}
		}
	}
}

// A per-partition bf16 bias through a pointer (bias_src_n 0), a bf16
// input and output, and the accumulator: ZeroAccumulate then
// Accumulate leaves each partition's sum of both records' outputs.
func TestActivateBiasPointerAccumulate(t *testing.T) {
	c := newCore(t)
	const n = 4
	var in [3][]float32
	for p := range 3 {
		in[p] = c.putBF16(60+p, 0, []float32{1, 2, 3, 4})
		c.putBF16(60+p, 0x100, []float32{float32(p) - 1}) // the bias: -1, 0, 1
	}
	a := Activate{AccumCmd: AccZeroAccumulate, BiasSrcN: 0, Src: contiguous(Addr(SBUF, 60, 0), n), Dst: contiguous(Addr(SBUF, 60, 0x200), n),
		InDtype: DtypeBF16, BiasDtype: DtypeBF16, OutDtype: DtypeBF16, Channels: 3, Func: 0x02, Scale: FP32(-1), Bias: Addr(SBUF, 60, 0x100)}
	again := a
	again.AccumCmd, again.Func = AccAccumulate, 0x1E // square
	if r := c.run1(ACT, NewActivate(a), NewActivate(again)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p := range 3 {
		b, _ := c.mem.Partition(SBUF, 60+p, 0x200, 0x208, false)
		var sum float64
		for i, x := range in[p] {
			relu := math.Max(-float64(x)+float64(p)-1, 0)
			sq := (-float64(x) + float64(p) - 1) * (-float64(x) + float64(p) - 1)
			sum += relu + sq
			if got := float64(dtypes[DtypeBF16].load(b[2*i:])); got != sq {
				t.Errorf("partition %d [%d] = %v, want %v", p, i, got, sq)
			}
		}
		if got := c.seqs[ACT].act.acc[60+p]; float64(got) != sum {
			t.Errorf("partition %d accumulator %v, want %v", p, got, sum)
		}
	}
}

func TestActivateValidation(t *testing.T) {
	base := Activate{BiasSrcN: 1, Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeFP32, BiasDtype: DtypeFP32,
		OutDtype: DtypeFP32, Channels: 1, Func: 0x01, Scale: FP32(1)}
	for name, mod := range map[string]func(*Activate){
		"bias_src_n 3":   func(a *Activate) { a.BiasSrcN = 3 },
		"scale_src 3":    func(a *Activate) { a.ScaleSrc = 3 },
		"accumulator 5":  func(a *Activate) { a.AccumCmd = 5 },
		"int bias":       func(a *Activate) { a.BiasDtype = DtypeInt8 },
		"fp32r in":       func(a *Activate) { a.InDtype = DtypeFP32R },
		"counts":         func(a *Activate) { a.Dst.Num[0] = 5 },
		"misaligned ptr": func(a *Activate) { a.ScaleSrc, a.Scale = ImmPtr, 2 },
	} {
		c := newCore(t)
		a := base
		mod(&a)
		if r := c.run1(ACT, NewActivate(a)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	for name, mod := range map[string]func(*Activate){
		"unnamed function": func(a *Activate) { a.Func = 0x40 },
		"load accumulate":  func(a *Activate) { a.AccumCmd = AccLoad },
		"fp8 in":           func(a *Activate) { a.InDtype = DtypeFP8E4 },
	} {
		c := newCore(t)
		a := base
		mod(&a)
		if r := c.run1(ACT, NewActivate(a)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 1 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// ACTIVATION_READ_ACCUMULATOR writes each partition's accumulator: the
// fp32 sum of an exp over 3 elements (tolerance 2 ulps of fp32 against
// the float64 sum of the rounded outputs), and 0 where nothing
// accumulated.
func TestReadAccumulator(t *testing.T) {
	c := newCore(t)
	xs := []float32{0.5, -1, 2}
	for p := range 2 {
		c.put32s(SBUF, 70+p, 0, fp32s(xs...)...)
	}
	a := Activate{AccumCmd: AccZeroAccumulate, BiasSrcN: 1, Src: contiguous(Addr(SBUF, 70, 0), 3), Dst: contiguous(Addr(SBUF, 70, 0x40), 3),
		InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2, Func: 0x07, Scale: FP32(1), Bias: FP32(0)}
	read := ReadAccumulator{Count: 1, Dtype: DtypeFP32, Channels: 3, Dst: Tensor1D{Start: Addr(PSUM, 70, 0x10), Num: 1}}
	if r := c.run1(ACT, NewActivate(a), NewReadAccumulator(read)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	var want float64
	for _, x := range xs {
		want += float64(float32(math.Exp(float64(x))))
	}
	for p, w := range []float32{float32(want), float32(want), 0} {
		got := math.Float32frombits(c.get32s(PSUM, 70+p, 0x10, 1)[0])
		if ulps(got, w) > 2 {
			t.Errorf("partition %d accumulator %v, want %v", 70+p, got, w)
		}
	}
	for name, mod := range map[string]func(*ReadAccumulator){
		"two elements": func(r *ReadAccumulator) { r.Count, r.Dst.Num = 2, 2 },
		"negated":      func(r *ReadAccumulator) { r.Negated = 1 },
		"int dtype":    func(r *ReadAccumulator) { r.Dtype = DtypeInt32 },
		"reserved":     func(r *ReadAccumulator) { r.Tail[8] = 1 },
	} {
		c := newCore(t)
		r := read
		mod(&r)
		if res := c.run1(ACT, NewReadAccumulator(r)); res.State != Faulted || !errors.Is(res.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

// The scale through a register pointer (scale_src 2), alpha through a
// pointer (imm_src 1), the bias inline (bias_src_n 1): prelu on two
// partitions, each with its own scale and alpha. One fp32 multiply, one
// add, then prelu in float64 rounded once: tolerance 0 against that.
func TestActivateScalarSources(t *testing.T) {
	c := newCore(t)
	xs := []float32{-2, -0.5, 1, 3}
	for p := range 2 {
		c.put32s(SBUF, 30+p, 0, fp32s(xs...)...)
		c.put32s(SBUF, 30+p, 0x40, FP32(float32(p+1)))       // scale: 1, 2
		c.put32s(SBUF, 30+p, 0x80, FP32(0.125*float32(p+1))) // alpha: 0.125, 0.25
	}
	a := Activate{ScaleSrc: ImmRegPtr, ImmSrc: ImmPtr, BiasSrcN: 1, Src: contiguous(Addr(SBUF, 30, 0), 4), Dst: contiguous(Addr(SBUF, 30, 0x100), 4),
		InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2, Func: 0x04,
		Scale: 7, Bias: FP32(0.5), Imm: Addr(SBUF, 30, 0x80)}
	setReg := NewALUImm(ALUAdd, 7, 7, Addr(SBUF, 30, 0x40))
	if r := c.run1(ACT, setReg, NewActivate(a)); r.State != Halted || c.seqs[ACT].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for p := range 2 {
		sc, alpha := float32(p+1), 0.125*float64(p+1)
		for i, g := range c.get32s(SBUF, 30+p, 0x100, 4) {
			z := float64(float32(sc*xs[i]) + 0.5)
			want := float32(math.Max(z, 0) + alpha*math.Min(z, 0))
			if math.Float32frombits(g) != want {
				t.Errorf("partition %d [%d] = %v, want %v", p, i, math.Float32frombits(g), want)
			}
		}
	}
}
