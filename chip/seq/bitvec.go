package seq

// The bitvec ALU: ops on the raw bits of integer elements.

// The bitvec ops (is_general_bitvec_op, 59668120065 §3.3).
const (
	aluNot ALUOp = 0x01
	aluASL ALUOp = 0x02
	aluASR ALUOp = 0x03
	aluAnd ALUOp = 0x0A
	aluOr  ALUOp = 0x0B
	aluXor ALUOp = 0x0C
	aluLSL ALUOp = 0x10
	aluLSR ALUOp = 0x11
)

// bitvecNames name the bitvec ops in traces and errors.
var bitvecNames = map[ALUOp]string{
	aluNot: "bitwise_not", aluASL: "arith_shift_left", aluASR: "arith_shift_right", aluAnd: "bitwise_and",
	aluOr: "bitwise_or", aluXor: "bitwise_xor", aluLSL: "logical_shift_left", aluLSR: "logical_shift_right", aluCRC32: "crc32",
}

func bitvecValid(op ALUOp) bool {
	switch op {
	case ALUBypass, aluNot, aluASL, aluASR, aluAnd, aluOr, aluXor, aluLSL, aluLSR:
		return true
	}
	return false
}

// Raw integer elements of 1, 2, 4 or 8 bytes, little-endian.
func loadBits(b []byte, w uint32) uint64 {
	switch w {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(le.Uint16(b))
	case 4:
		return uint64(le.Uint32(b))
	}
	return le.Uint64(b)
}

func storeBits(b []byte, w uint32, v uint64) {
	switch w {
	case 1:
		b[0] = byte(v)
	case 2:
		le.PutUint16(b, uint16(v))
	case 4:
		le.PutUint32(b, uint32(v))
	default:
		le.PutUint64(b, v)
	}
}

// bitvec applies a bitvec op to w-byte integers: the shifts take their
// amount from b as an unsigned number; an amount of the width or more
// shifts every bit out (guessed), the arithmetic right shift filling
// with the sign of a signed dtype.
func bitvec(op ALUOp, a, b uint64, w uint32, sgn bool) uint64 {
	bits := uint64(w) * 8
	switch op {
	case aluNot:
		return ^a
	case aluAnd:
		return a & b
	case aluOr:
		return a | b
	case aluXor:
		return a ^ b
	case aluASL, aluLSL:
		if b >= bits {
			return 0
		}
		return a << b
	case aluLSR:
		if b >= bits {
			return 0
		}
		return a >> b
	case aluASR:
		x := int64(a<<(64-bits)) >> (64 - bits) // sign-extended
		if !sgn {
			x = int64(a)
		}
		return uint64(x >> min(b, 63))
	}
	return a // bypass
}
