package seq

import "math"

// The PE's 8-bit float inputs. NKI names float8_e4m3 and float8_e5m2 as
// matmul inputs (48300537808); the dtype bytes are FP8E4 14 and FP8E5 15
// (59703506210). FP8E3 (e3m4) is not named for the PE and stays counted.

// fp8Format is one 8-bit float layout: sign, exp exponent bits, the
// rest mantissa.
type fp8Format struct {
	exp, bias uint8
}

// fp8Formats are the layouts by dtype. Both keep IEEE's top exponent for
// Inf and NaN (guessed for e4m3, G-PE8: OCP's e4m3fn instead has no
// Inf and a maximum of 448; the chip's fp8 converter has a range
// setting, 60101245570, whose default is not given).
var fp8Formats = map[Dtype]fp8Format{
	DtypeFP8E4: {exp: 4, bias: 7},
	DtypeFP8E5: {exp: 5, bias: 15},
}

// decode is b's value, exact in float32.
func (f fp8Format) decode(b byte) float32 {
	mant := 7 - f.exp
	e := int(b>>mant) & (1<<f.exp - 1)
	m := int(b) & (1<<mant - 1)
	var v float64
	switch {
	case e == 1<<f.exp-1 && m == 0:
		v = math.Inf(1)
	case e == 1<<f.exp-1:
		v = math.NaN()
	case e == 0: // subnormal
		v = math.Ldexp(float64(m), 1-int(f.bias)-int(mant))
	default:
		v = math.Ldexp(float64(m|1<<mant), e-int(f.bias)-int(mant))
	}
	if b&0x80 != 0 {
		v = -v
	}
	return float32(v)
}
