package seq

import "math"

// CAST's integer targets: numpy astype, which the NKI simulator's
// reference is, truncates toward zero (59979245665 §6.4). Out-of-range
// values saturate and NaN gives 0 (guessed: astype leaves both
// undefined). The arithmetic records' own stores round to nearest even
// instead (dtype.go): the conflict is in docs/isa.md.
var truncStores = [16]func([]byte, float32){
	DtypeInt8:   func(b []byte, v float32) { b[0] = byte(int8(truncInt(v, math.MinInt8, math.MaxInt8))) },
	DtypeUint8:  func(b []byte, v float32) { b[0] = byte(truncInt(v, 0, math.MaxUint8)) },
	DtypeInt16:  func(b []byte, v float32) { le.PutUint16(b, uint16(int16(truncInt(v, math.MinInt16, math.MaxInt16)))) },
	DtypeUint16: func(b []byte, v float32) { le.PutUint16(b, uint16(truncInt(v, 0, math.MaxUint16))) },
	DtypeInt32:  func(b []byte, v float32) { le.PutUint32(b, uint32(int32(truncInt(v, math.MinInt32, math.MaxInt32)))) },
	DtypeUint32: func(b []byte, v float32) { le.PutUint32(b, uint32(truncInt(v, 0, math.MaxUint32))) },
}

// truncInt truncates v toward zero inside [lo, hi]; NaN gives 0.
func truncInt(v float32, lo, hi float64) int64 { return saturate(math.Trunc(float64(v)), lo, hi) }
