// Package halffloat converts the 16-bit floats the chip computes with
// (the DMA engines' reductions, the engines' tensor arithmetic):
// bfloat16 (the top half of a float32) and IEEE binary16, both rounded to
// nearest even.
package halffloat

import "math"

func BF16ToFloat(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func FloatToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f { // NaN: keep it a quiet NaN
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b >> 16 & 1)) >> 16)
}

func FP16ToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h >> 10 & 0x1f)
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac * 2^-24
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

func FloatToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	frac := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow (and Inf)
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero in binary16
		if exp < -10 {
			return sign
		}
		m := frac | 0x800000
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		if rem := m & (1<<shift - 1); rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | frac>>13
	if rem := frac & 0x1fff; rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // may carry into the exponent, up to Inf: correct
	}
	return sign | uint16(r)
}
