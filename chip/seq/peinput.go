package seq

import "math"

// The dtypes the PE multiplies, and how each reaches the fp32 MAC: NKI's
// nc_matmul takes fp8 e4m3/e5m2, bf16, fp16, tf32 and fp32 and
// accumulates in fp32 (48300537808, 59721253162: the array widens every
// operand to float). Data, not code: a dtype without a row is counted.

// peInput is one PE input dtype.
type peInput struct {
	size uint32
	load func([]byte) float32
	run  func(xs []float32, b []byte) // len(xs) adjacent elements; nil: load each
}

var peInputs = map[Dtype]peInput{
	DtypeBF16:  {2, dtypes[DtypeBF16].load, bf16Run},
	DtypeFP16:  {2, dtypes[DtypeFP16].load, nil},
	DtypeFP32:  {4, dtypes[DtypeFP32].load, nil},
	DtypeFP8E4: {1, fp8Load(DtypeFP8E4), nil},
	DtypeFP8E5: {1, fp8Load(DtypeFP8E5), nil},
}

func fp8Load(d Dtype) func([]byte) float32 {
	f := fp8Formats[d]
	return func(b []byte) float32 { return f.decode(b[0]) }
}

// bf16Run widens bf16s: a bf16 is an fp32's top half, NaN payloads kept.
func bf16Run(xs []float32, b []byte) {
	b = b[:2*len(xs)]
	for j := range xs {
		xs[j] = math.Float32frombits(uint32(le.Uint16(b[2*j:])) << 16)
	}
}

// fp32_mode (NEURON_ISA_TPB_PE_FP32MODE, 59686003097 §4.3): an fp32
// input needs Low, High or Low_High, any other input None.
const (
	FP32ModeNone    uint8 = 0
	FP32ModeLow     uint8 = 1 // tf32: the reduced-mantissa pass
	FP32ModeHigh    uint8 = 2
	FP32ModeLowHigh uint8 = 3 // the full-fp32 split-mantissa product
)

// fp32Rounds is what each fp32_mode does to an fp32 operand before the
// multiply; a mode without a row (High, whose pass's share of the
// product no source gives) is counted. G-PE4 in docs/isa.md.
var fp32Rounds = map[uint8]func(float32) float32{
	FP32ModeLow:     toTF32,
	FP32ModeLowHigh: func(v float32) float32 { return v },
}

// toTF32 rounds v to tf32's 10 mantissa bits, nearest even (guessed:
// the array may truncate); Inf and NaN pass.
func toTF32(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7F800000 == 0x7F800000 {
		return v
	}
	b += 0xFFF + (b>>13)&1
	return math.Float32frombits(b &^ 0x1FFF)
}

// validFP32Mode is the validators' pairing of the input dtype and
// fp32_mode.
func validFP32Mode(in Dtype, mode uint8) bool {
	if in == DtypeFP32 {
		return mode >= FP32ModeLow && mode <= FP32ModeLowHigh
	}
	return mode == FP32ModeNone
}
