package seq

// The other three S3D3_TS opcodes (59818285506 §3, §8): TENSOR_SCALAR_
// BITVEC (0x53) applies two bitvec ops to the raw bits of integers; the
// deprecated PTR forms (0x44 arithmetic, 0x54 bitvec) are the same
// records whose imm*_src must be 0 and whose two scalars are always
// per-partition pointers.

const (
	OpTensorScalarPtr       Opcode = 0x44
	OpTensorScalarBitvec    Opcode = 0x53
	OpTensorScalarPtrBitvec Opcode = 0x54
)

// tsForm is what a tensor-scalar opcode changes: its op set and where
// its scalars come from.
type tsForm struct{ bitvec, ptr bool }

var tsForms = map[Opcode]tsForm{
	OpTensorScalar:          {},
	OpTensorScalarBitvec:    {bitvec: true},
	OpTensorScalarPtr:       {ptr: true},
	OpTensorScalarPtrBitvec: {bitvec: true, ptr: true},
}

// aluCRC32 is a bitvec op (is_bitvec_op) whose polynomial and state no
// source gives: valid, counted.
const aluCRC32 ALUOp = 0x1C

// bitvecDtype is the bitvec forms' dtype rule: in = out, an 8-, 16- or
// 32-bit integer (59818285506 §6d).
func bitvecDtype(d Dtype) bool {
	switch d {
	case DtypeInt8, DtypeUint8, DtypeInt16, DtypeUint16, DtypeInt32, DtypeUint32:
		return true
	}
	return false
}

func shiftLeft(op ALUOp) bool  { return op == aluASL || op == aluLSL }
func shiftRight(op ALUOp) bool { return op == aluASR || op == aluLSR }

// validBitvec is the bitvec rules: both ops bitvec, the dtypes, an
// inline immediate that fits the dtype's width, and the shift rules (a
// left then right shift pair, or any arithmetic right shift, needs a
// 4-byte dtype: alu_shift_check, §6b).
func (ts *TensorScalar) validBitvec(f tsForm, bad func(string, ...any) error) error {
	w := dtypes[ts.InDtype].size
	fits := func(src ImmSrc, v uint32) bool { return f.ptr || src != ImmInline || w == 4 || v>>(8*w) == 0 }
	switch {
	case !(bitvecValid(ts.Op0) || ts.Op0 == aluCRC32) || !(bitvecValid(ts.Op1) || ts.Op1 == aluCRC32):
		return bad("bitvec ops %v, %v", ts.Op0.tsName(), ts.Op1.tsName())
	case !bitvecDtype(ts.InDtype) || ts.InDtype != ts.OutDtype:
		return bad("bitvec dtypes %v -> %v", ts.InDtype, ts.OutDtype)
	case !fits(ts.Imm0Src, ts.Imm0) || !fits(ts.Imm1Src, ts.Imm1):
		return bad("immediates %#x, %#x wider than %v", ts.Imm0, ts.Imm1, ts.InDtype)
	case w != 4 && (shiftLeft(ts.Op0) && shiftRight(ts.Op1) || ts.Op0 == aluASR || ts.Op1 == aluASR):
		return bad("shifts %v, %v on %v", ts.Op0.tsName(), ts.Op1.tsName(), ts.InDtype)
	}
	return nil
}

// bitsAt is the scalar's raw bits on partition p for w-byte elements.
func (s scalar) bitsAt(mem OnChip, p int, w uint32) (uint64, error) {
	if s.ptr == nil {
		return uint64(s.raw), nil
	}
	b, err := s.ptr.part(mem, p, false)
	if err != nil {
		return 0, err
	}
	return loadBits(b, w), nil
}

// computeTSBits applies the two bitvec ops to each element's bits, with
// reverse_operands as the arithmetic form has it.
func (r *run) computeTSBits(ts *TensorScalar, o [2]operand, s [2]scalar, mem OnChip) (stopped bool, err error) {
	w, sgn := dtypes[ts.InDtype].size, signedInt(ts.InDtype)
	rev0 := ts.Reverse == RevFirst || ts.Reverse == RevBoth
	rev1 := ts.Reverse == RevSecond || ts.Reverse == RevBoth
	apply := func(op ALUOp, x, k uint64, rev bool) uint64 {
		if rev {
			return bitvec(op, k, x, w, sgn)
		}
		return bitvec(op, x, k, w, sgn)
	}
	var k0, k1 uint64
	last, serr := -1, error(nil)
	stopped, err = r.zip(int(ts.Channels), mem, &o[1], &o[0], nil, func(p int, d, a, _ []byte) {
		if p != last {
			last = p
			var e0, e1 error
			k0, e0 = s[0].bitsAt(mem, p, w)
			k1, e1 = s[1].bitsAt(mem, p, w)
			if serr == nil {
				serr = firstErr(e0, e1)
			}
		}
		x := loadBits(a, w)
		if ts.Op0 != ALUBypass {
			x = apply(ts.Op0, x, k0, rev0)
		}
		if ts.Op1 != ALUBypass {
			x = apply(ts.Op1, x, k1, rev1)
		}
		storeBits(d, w, x)
	})
	if err == nil {
		err = serr
	}
	return stopped, err
}

// generation is the core's generation (the default when unset).
func (r *run) generation() Generation {
	if r.cfg.Gen == 0 {
		return DefaultGeneration
	}
	return r.cfg.Gen
}
