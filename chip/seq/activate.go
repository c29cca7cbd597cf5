package seq

import (
	"fmt"
	"math"
)

// ACTIVATE (0x21), struct S3D3_AC (59857490485): on each partition,
// every source element x becomes f(scale·x + bias) in the destination,
// in fp32, the affine part as two fp32 operations (multiply, then add:
// 59891156191 §2.3). f is a closed form evaluated in float64 and
// rounded once: the hardware evaluates host-loaded piecewise cubics
// instead, so results differ from it by the tables' error (G-ACT3).
// ACTIVATION_TABLE_LOAD (0x23) only makes a table set resident: here,
// where f is closed-form, it does nothing (the simulator's choice too).

// Activate is a decoded ACTIVATE record.
type Activate struct {
	ImmSrc, ScaleSrc             ImmSrc
	AccumCmd                     uint8
	BiasSrcN                     uint8 // IMM_SRC_N: 0 pointer, 1 inline, 2 register pointer
	Src, Dst                     Tensor3D
	InDtype, BiasDtype, OutDtype Dtype
	Channels                     uint8
	Func                         uint8
	Scale, Bias, Imm             uint32 // fp32 bits, an ISA address, or a register number
}

// Activate decodes r as S3D3_AC.
func (r *Record) Activate() Activate {
	return Activate{
		ImmSrc: ImmSrc(r[offACImmSrc]), ScaleSrc: ImmSrc(r[offACScaleSrc]), AccumCmd: r[offACAccum], BiasSrcN: r[offACBiasSrc],
		Src: r.tensor3D(offACSrc), Dst: r.tensor3D(offACDst),
		InDtype: Dtype(r[offACDtypes] & 0xF), BiasDtype: Dtype(r[offACDtypes] >> 4), OutDtype: Dtype(r[offACOutDtype]),
		Channels: r[offACChannels], Func: r[offACFunc],
		Scale: r.u32(offACScale), Bias: r.u32(offACBias), Imm: r.u32(offACImm),
	}
}

// NewActivate lays a out as an ACTIVATE record.
func NewActivate(a Activate) *Record {
	r := NewRecord(OpActivate)
	r[offACImmSrc], r[offACScaleSrc], r[offACAccum], r[offACBiasSrc] = byte(a.ImmSrc), byte(a.ScaleSrc), a.AccumCmd, a.BiasSrcN
	r.putTensor3D(offACSrc, a.Src)
	r.putTensor3D(offACDst, a.Dst)
	r[offACDtypes] = byte(a.InDtype&0xF) | byte(a.BiasDtype)<<4
	r[offACOutDtype], r[offACChannels], r[offACFunc] = byte(a.OutDtype), a.Channels, a.Func
	r.put32(offACScale, a.Scale)
	r.put32(offACBias, a.Bias)
	r.put32(offACImm, a.Imm)
	return r
}

// The accumulator commands (ACCUM_CMD, 59857490485).
const (
	AccIdle           uint8 = 0
	AccZero           uint8 = 1
	AccAccumulate     uint8 = 2
	AccZeroAccumulate uint8 = 3
	AccLoad           uint8 = 4 // what it loads is not given: counted
)

// actFunc is one activation function: its name, and its closed form
// (59891156191 §5) of x and alpha (the record's imm).
type actFunc struct {
	name string
	f    func(x, alpha float64) float64
}

func sigmoid(x float64) float64 { return 1 / (math.Exp(-x) + 1) }

// actFuncs are the function codes a source names (59760038450, the
// encoder's remap table); any other code is counted as not emulated.
var actFuncs = map[uint8]actFunc{
	0x01: {"identity", func(x, _ float64) float64 { return x }},
	0x02: {"relu", func(x, _ float64) float64 { return math.Max(x, 0) }},
	0x03: {"lrelu", func(x, _ float64) float64 { return leaky(x, 0.01) }},
	0x04: {"prelu", leaky},
	0x05: {"sigmoid", func(x, _ float64) float64 { return sigmoid(x) }},
	0x06: {"tanh", func(x, _ float64) float64 { return math.Tanh(x) }},
	0x07: {"exp", func(x, _ float64) float64 { return math.Exp(x) }},
	0x08: {"sqrt", func(x, _ float64) float64 { return math.Sqrt(x) }},
	0x09: {"softplus", func(x, _ float64) float64 { return math.Log1p(math.Exp(-math.Abs(x))) + math.Max(x, 0) }},
	0x0A: {"ln", func(x, _ float64) float64 { return math.Log(x) }},
	0x13: {"sin", func(x, _ float64) float64 { return math.Sin(x) }},
	0x15: {"erf", func(x, _ float64) float64 { return math.Erf(x) }},
	0x17: {"silu", func(x, _ float64) float64 { return x * sigmoid(x) }},
	0x1C: {"cos", func(x, _ float64) float64 { return math.Cos(x) }},
	0x1D: {"rsqrt", func(x, _ float64) float64 { return 1 / math.Sqrt(x) }},
	0x1E: {"square", func(x, _ float64) float64 { return x * x }},
	0x1F: {"gelu", func(x, _ float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }},
	0x80: {"copy", func(x, _ float64) float64 { return x }},
	0x81: {"reciprocal", func(x, _ float64) float64 { return 1 / x }},
}

func leaky(x, slope float64) float64 {
	if x <= 0 {
		return x * slope
	}
	return x
}

// biasSrc turns IMM_SRC_N into IMM_SRC; false for a value past both.
func biasSrc(n uint8) (ImmSrc, bool) {
	switch n {
	case 0:
		return ImmPtr, true
	case 1:
		return ImmInline, true
	case 2:
		return ImmRegPtr, true
	}
	return 0, false
}

// valid applies the validators' rules: sources ≤ 2, accumulator command
// ≤ 4, dtypes (no FP32R in; the bias fp32, bf16 or fp16), 1..128
// partitions, equal element counts.
func (a *Activate) valid() error {
	if err := validDtypes(a.Channels, a.OutDtype, false, a.InDtype); err != nil {
		return err
	}
	_, biasOK := biasSrc(a.BiasSrcN)
	switch {
	case a.ImmSrc > ImmRegPtr || a.ScaleSrc > ImmRegPtr || !biasOK:
		return fmt.Errorf("%w: ACTIVATE sources imm %d, scale %d, bias_n %d", ErrOperand, a.ImmSrc, a.ScaleSrc, a.BiasSrcN)
	case a.AccumCmd > AccLoad:
		return fmt.Errorf("%w: ACTIVATE accumulator_cmd %d", ErrOperand, a.AccumCmd)
	case a.BiasDtype != DtypeFP32 && a.BiasDtype != DtypeBF16 && a.BiasDtype != DtypeFP16:
		return fmt.Errorf("%w: ACTIVATE bias dtype %v", ErrOperand, a.BiasDtype)
	case a.Src.elems() != a.Dst.elems():
		return fmt.Errorf("%w: ACTIVATE %d source elements, %d destination elements", ErrOperand, a.Src.elems(), a.Dst.elems())
	}
	return nil
}

// activate runs an ACTIVATE record.
func (r *run) activate(rec *Record) (skipped string, stopped bool, err error) {
	a := rec.Activate()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := a.valid(); err != nil {
		return "", false, err
	}
	var o [2]operand
	ok, err := r.operands(int(a.Channels), mem, []Tensor4D{a.Src.t4(), a.Dst.t4()}, []Dtype{a.InDtype, a.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[1], a.OutDtype)
	}
	if err != nil {
		return "", false, err
	}
	sc, err := r.actScalars(&a, mem)
	if err != nil {
		return "", false, err
	}
	if !ok {
		return "indirect address", false, nil
	}
	if why := a.notEmulated(); why != "" {
		return why, false, nil
	}
	if r.act == nil {
		r.act = new(actState)
	}
	return r.computeAct(&a, o, sc, mem)
}

// actScalars are an ACTIVATE record's scale, bias and imm (alpha).
type actScalars struct{ scale, bias, imm scalar }

// actScalars resolves the three scalars from their sources: the scale and
// imm read fp32, the bias its own dtype (59857490485).
func (r *run) actScalars(a *Activate, mem OnChip) (s actScalars, err error) {
	bsrc, _ := biasSrc(a.BiasSrcN)
	n := int(a.Channels)
	if err = r.resolveScalarOf(&s.scale, a.ScaleSrc, a.Scale, DtypeFP32, n, mem); err != nil {
		return s, err
	}
	if err = r.resolveScalarOf(&s.bias, bsrc, a.Bias, a.BiasDtype, n, mem); err != nil {
		return s, err
	}
	err = r.resolveScalarOf(&s.imm, a.ImmSrc, a.Imm, DtypeFP32, n, mem)
	return s, err
}

// notEmulated says why a valid record is only counted; "" if it runs.
func (a *Activate) notEmulated() string {
	switch {
	case actFuncs[a.Func].f == nil:
		return fmt.Sprintf("activation function %#x", a.Func)
	case dtypes[a.InDtype].load == nil:
		return a.InDtype.String()
	case dtypes[a.OutDtype].store == nil:
		return a.OutDtype.String()
	case a.AccumCmd == AccLoad:
		return "LoadAccumulate"
	}
	return ""
}

// computeAct applies f(scale·x + bias) element by element (or row by
// row, rows.go) and keeps the per-partition sums the accumulator command
// asks for.
func (r *run) computeAct(a *Activate, o [2]operand, s actScalars, mem OnChip) (skipped string, stopped bool, err error) {
	f := actFuncs[a.Func].f
	in, out := &dtypes[a.InDtype], &dtypes[a.OutDtype]
	ap := actPart{s: s, mem: mem, acc: accumulator{st: r.act, cmd: a.AccumCmd, lane: o[0].pl.p0, last: -1}} // per partition: the source's (guessed)
	n := int(a.Channels)
	done, stopped, err := r.rows(n, mem, &o[1], &o[0], nil, r.actRows(a, &ap), ap.start)
	if !done {
		stopped, err = r.zip(n, mem, &o[1], &o[0], nil, func(p int, d, x, _ []byte) {
			if p != ap.acc.last {
				_ = ap.start(p)
			}
			y := ap.apply(f, in.load(x))
			ap.acc.sum += y
			out.store(d, y)
		})
	}
	if err == nil && !stopped {
		ap.acc.flush()
	}
	if err == nil {
		err = ap.err
	}
	return "", stopped, err
}

// actPart is an ACTIVATE record's state on the partition it is on: the
// scalars and the running sum.
type actPart struct {
	s                  actScalars
	mem                OnChip
	acc                accumulator
	scale, bias, alpha float32
	err                error // the first scalar the memory refused: the record ends with it
}

// start folds the previous partition's sum and reads p's scalars.
func (ap *actPart) start(p int) error {
	ap.acc.flush()
	ap.acc.last, ap.acc.sum = p, 0
	var e1, e2, e3 error
	ap.scale, e1 = ap.s.scale.at(ap.mem, p)
	ap.bias, e2 = ap.s.bias.at(ap.mem, p)
	ap.alpha, e3 = ap.s.imm.at(ap.mem, p)
	if ap.err == nil {
		ap.err = firstErr(e1, e2, e3)
	}
	return nil
}

// apply is one element's f(scale·x + bias).
func (ap *actPart) apply(f func(x, alpha float64) float64, x float32) float32 {
	z := float32(ap.scale*x) + ap.bias // two roundings: no fused multiply-add
	return float32(f(float64(z), float64(ap.alpha)))
}

// accumulator folds one partition's outputs into its ACT accumulator
// when the record moves on to the next partition.
type accumulator struct {
	st   *actState
	cmd  uint8
	lane int
	last int // the partition being summed, -1 before the first
	sum  float32
}

func (a *accumulator) flush() {
	if a.last < 0 {
		return
	}
	switch i := a.lane + a.last; a.cmd {
	case AccZero:
		a.st.acc[i] = 0
	case AccZeroAccumulate:
		a.st.acc[i] = a.sum
	case AccAccumulate:
		a.st.acc[i] += a.sum
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
