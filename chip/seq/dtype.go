package seq

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/neuronfs/neuronfs/internal/halffloat"
)

// Dtype is the ISA's dtype byte (NEURON_ISA_TPB_DTYPE, 59703506210).
type Dtype uint8

const (
	DtypeUint64 Dtype = 1
	DtypeInt8   Dtype = 2
	DtypeUint8  Dtype = 3
	DtypeInt16  Dtype = 4
	DtypeUint16 Dtype = 5
	DtypeBF16   Dtype = 6
	DtypeFP16   Dtype = 7
	DtypeInt32  Dtype = 8
	DtypeUint32 Dtype = 9
	DtypeFP32   Dtype = 10
	DtypeFP32R  Dtype = 11
	DtypeInt64  Dtype = 12
	DtypeFP8E3  Dtype = 13
	DtypeFP8E4  Dtype = 14
	DtypeFP8E5  Dtype = 15
)

func (d Dtype) wide() bool { return d == DtypeUint64 || d == DtypeInt64 }

// dtypeInfo is one dtype: its width, its name, and how an arithmetic
// engine takes it to and from float32 (nil: not emulated).
type dtypeInfo struct {
	name  string
	size  uint32
	load  func([]byte) float32
	store func([]byte, float32)
}

// dtypes are the base dtypes (0..15 are the validators' legal range;
// 0 is INVALID). The engines' arithmetic converts every element to fp32
// and back (docs/isa.md): exact for the 8- and 16-bit integers, rounded
// for 32-bit integers beyond 2^24. A float stored into an integer rounds
// to nearest even and saturates, NaN giving 0 (guessed).
var dtypes = [16]dtypeInfo{
	DtypeUint64: {name: "u64", size: 8},
	DtypeInt8:   {"i8", 1, func(b []byte) float32 { return float32(int8(b[0])) }, func(b []byte, v float32) { b[0] = byte(int8(toInt(v, math.MinInt8, math.MaxInt8))) }},
	DtypeUint8:  {"u8", 1, func(b []byte) float32 { return float32(b[0]) }, func(b []byte, v float32) { b[0] = byte(toInt(v, 0, math.MaxUint8)) }},
	DtypeInt16:  {"i16", 2, func(b []byte) float32 { return float32(int16(le.Uint16(b))) }, func(b []byte, v float32) { le.PutUint16(b, uint16(int16(toInt(v, math.MinInt16, math.MaxInt16)))) }},
	DtypeUint16: {"u16", 2, func(b []byte) float32 { return float32(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, uint16(toInt(v, 0, math.MaxUint16))) }},
	DtypeBF16:   {"bf16", 2, func(b []byte) float32 { return halffloat.BF16ToFloat(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, halffloat.FloatToBF16(v)) }},
	DtypeFP16:   {"fp16", 2, func(b []byte) float32 { return halffloat.FP16ToFloat(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, halffloat.FloatToFP16(v)) }},
	DtypeInt32:  {"i32", 4, func(b []byte) float32 { return float32(int32(le.Uint32(b))) }, func(b []byte, v float32) { le.PutUint32(b, uint32(int32(toInt(v, math.MinInt32, math.MaxInt32)))) }},
	DtypeUint32: {"u32", 4, func(b []byte) float32 { return float32(le.Uint32(b)) }, func(b []byte, v float32) { le.PutUint32(b, uint32(toInt(v, 0, math.MaxUint32))) }},
	DtypeFP32:   {"fp32", 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }, func(b []byte, v float32) { le.PutUint32(b, math.Float32bits(v)) }},
	DtypeFP32R:  {name: "fp32r", size: 4},
	DtypeInt64:  {name: "i64", size: 8},
	DtypeFP8E3:  {name: "fp8e3", size: 1},
	DtypeFP8E4:  {name: "fp8e4", size: 1},
	DtypeFP8E5:  {name: "fp8e5", size: 1},
}

var le = binary.LittleEndian

// info returns d's row; false for INVALID and values past the table.
func (d Dtype) info() (*dtypeInfo, bool) {
	if d == 0 || int(d) >= len(dtypes) {
		return nil, false
	}
	return &dtypes[d], true
}

func (d Dtype) String() string {
	if in, ok := d.info(); ok {
		return in.name
	}
	return fmt.Sprintf("dtype%d", uint8(d))
}

// toInt rounds v to the nearest integer (ties to even) inside [lo, hi].
func toInt(v float32, lo, hi float64) int64 { return saturate(math.RoundToEven(float64(v)), lo, hi) }

// saturate clamps the whole number f to [lo, hi]; NaN gives 0.
func saturate(f, lo, hi float64) int64 {
	switch {
	case f != f:
		return 0
	case f < lo:
		return int64(lo)
	case f > hi:
		return int64(hi)
	}
	return int64(f)
}
