package seq

import (
	"fmt"
	"math"
)

// ACTIVATE_QUANTIZE (0x22), struct S3D3_AQ (59857490485 §4.1): on each
// partition, every element x becomes
// qscale·f(x·dqscale + bias[p]) + qzero, stored as the output dtype
// (UINT8 in both flows the validator admits). The pre-function affine
// rounds twice as ACTIVATE's does; the requantisation is the "last FMA"
// stage, one rounding (G-AQ1, guessed); the store rounds to nearest even
// and saturates as every arithmetic integer store here does.

// ActivateQuantize is a decoded S3D3_AQ record.
type ActivateQuantize struct {
	QuantScale, DequantScale, QuantZero uint32 // fp32 bits
	Src, Dst                            Tensor3D
	InDtype, BiasDtype, OutDtype        Dtype
	Channels, Func                      uint8
	BiasAddr                            uint32 // an ISA address: one bias per partition
}

// ActivateQuantize decodes r as S3D3_AQ.
func (r *Record) ActivateQuantize() ActivateQuantize {
	return ActivateQuantize{
		QuantScale: r.u32(offAQQuantScale), DequantScale: r.u32(offAQDequantScale), QuantZero: r.u32(offAQQuantZero),
		Src: r.tensor3D(offAQSrc), Dst: r.tensor3D(offAQDst),
		InDtype: Dtype(r[offAQDtypes] & 0xF), BiasDtype: Dtype(r[offAQDtypes] >> 4), OutDtype: Dtype(r[offAQOutDtype]),
		Channels: r[offAQChannels], Func: r[offAQFunc], BiasAddr: r.u32(offAQBias),
	}
}

// NewActivateQuantize lays a out as an ACTIVATE_QUANTIZE record.
func NewActivateQuantize(a ActivateQuantize) *Record {
	r := NewRecord(OpActivateQuantize)
	r.put32(offAQQuantScale, a.QuantScale)
	r.put32(offAQDequantScale, a.DequantScale)
	r.put32(offAQQuantZero, a.QuantZero)
	r.putTensor3D(offAQSrc, a.Src)
	r.putTensor3D(offAQDst, a.Dst)
	r[offAQDtypes], r[offAQOutDtype] = byte(a.InDtype&0xF)|byte(a.BiasDtype)<<4, byte(a.OutDtype)
	r[offAQChannels], r[offAQFunc] = a.Channels, a.Func
	r.put32(offAQBias, a.BiasAddr)
	return r
}

// valid is is_valid_activateq's rules as the page gives them: fp32 or
// int32 in, uint8 out, a float bias, non-zero scales, equal counts.
func (a *ActivateQuantize) valid() error {
	bad := func(format string, v ...any) error {
		return fmt.Errorf("%w: ACTIVATE_QUANTIZE: "+format, append([]any{ErrOperand}, v...)...)
	}
	switch {
	case a.Channels == 0 || a.Channels > Partitions:
		return bad("%d active channels", a.Channels)
	case a.InDtype != DtypeFP32 && a.InDtype != DtypeInt32 || a.OutDtype != DtypeUint8:
		return bad("dtypes %v -> %v", a.InDtype, a.OutDtype)
	case a.BiasDtype != DtypeFP32 && a.BiasDtype != DtypeBF16 && a.BiasDtype != DtypeFP16:
		return bad("bias dtype %v", a.BiasDtype)
	case math.Float32frombits(a.QuantScale) == 0 || math.Float32frombits(a.DequantScale) == 0:
		return bad("a zero scale")
	case a.Src.elems() != a.Dst.elems():
		return bad("%d source elements, %d destination elements", a.Src.elems(), a.Dst.elems())
	}
	return nil
}

// activateQuantize runs an ACTIVATE_QUANTIZE record.
func (r *run) activateQuantize(rec *Record) (skipped string, stopped bool, err error) {
	a := rec.ActivateQuantize()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := a.valid(); err != nil {
		return "", false, err
	}
	n := int(a.Channels)
	var o [2]operand
	ok, err := r.operands(n, mem, []Tensor4D{a.Src.t4(), a.Dst.t4()}, []Dtype{a.InDtype, a.OutDtype}, o[:])
	var bias scalar
	if err == nil {
		err = r.resolveScalarOf(&bias, ImmPtr, a.BiasAddr, a.BiasDtype, n, mem)
	}
	fn := actFuncs[a.Func].f
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	case fn == nil || a.Func == 0x04: // prelu: not supported fused (the header's note)
		return fmt.Sprintf("activation function %#x", a.Func), false, nil
	}
	in, out := dtypes[a.InDtype].load, dtypes[a.OutDtype].store
	dq, qs, qz := math.Float32frombits(a.DequantScale), float64(math.Float32frombits(a.QuantScale)), float64(math.Float32frombits(a.QuantZero))
	var serr error
	b := perPartition(func(p int) (float32, error) { return bias.at(mem, p) }, &serr)
	stopped, err = r.zip(n, mem, &o[1], &o[0], nil, func(p int, d, x, _ []byte) {
		z := float32(in(x)*dq) + b(p)
		y := float64(float32(fn(float64(z), 0)))
		out(d, float32(math.FMA(qs, y, qz)))
	})
	if err == nil {
		err = serr
	}
	return "", stopped, err
}
