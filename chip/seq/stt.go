package seq

import "fmt"

// SCALAR_TENSOR_TENSOR (0x9D arith, 0x9E bitvec) and TENSOR_TENSOR_SCAN
// (0xE5) share struct S2S2D2_STT (59693623482, 59741722122): two 2-D
// source patterns, one scalar, two ALU ops. STT computes, per element,
// (src0 op0 s) op1 src1, reverse_operands flipping either op's operands
// as in TENSOR_SCALAR; a bypassed op passes the tensor side on. The scan
// carries r = (src0 op0 r) op1 src1 along each partition's pattern from
// r = s (the seed: guessed, G-DV5) and writes every r.

const (
	OpSTTArith         Opcode = 0x9D
	OpSTTBitvec        Opcode = 0x9E
	OpTensorTensorScan Opcode = 0xE5
)

// Tensor2D is a TENSOR2D operand (12 bytes: ADDR4, int16 step[2],
// uint16 num[2]; 59693623482 §2).
type Tensor2D struct {
	Start uint32
	Step  [2]int16
	Num   [2]uint16
}

func (t Tensor2D) t4() Tensor4D {
	return Tensor4D{Start: t.Start, Step: [4]int16{t.Step[0], t.Step[1]}, Num: [4]uint16{t.Num[0], t.Num[1], 1, 1}}
}

func (t Tensor2D) elems() uint64 { return uint64(t.Num[0]) * uint64(t.Num[1]) }

func (r *Record) tensor2D(off int) Tensor2D {
	return Tensor2D{Start: r.u32(off),
		Step: [2]int16{int16(le.Uint16(r[off+offT2Step:])), int16(le.Uint16(r[off+offT2Step+2:]))},
		Num:  [2]uint16{le.Uint16(r[off+offT2Num:]), le.Uint16(r[off+offT2Num+2:])}}
}

func (r *Record) putTensor2D(off int, t Tensor2D) {
	r.put32(off, t.Start)
	for i := range 2 {
		le.PutUint16(r[off+offT2Step+2*i:], uint16(t.Step[i]))
		le.PutUint16(r[off+offT2Num+2*i:], t.Num[i])
	}
}

// STT is a decoded S2S2D2_STT record.
type STT struct {
	Src0, Src1, Dst    Tensor2D
	Op0, Op1           ALUOp
	Reverse            RevOps
	Imm0Src            ImmSrc
	In0, In1, OutDtype Dtype // the pair's low and high nibbles, out_dtype
	ImmDtype           Dtype
	Channels           uint8
	AccumCmd           uint8
	Reserved           [3]byte
	Imm0               uint32
}

// STT decodes r as S2S2D2_STT.
func (r *Record) STT() STT {
	return STT{
		Src0: r.tensor2D(offSTTSrc0), Src1: r.tensor2D(offSTTSrc1), Dst: r.tensor2D(offSTTDst),
		Op0: ALUOp(r[offSTTOp0]), Op1: ALUOp(r[offSTTOp1]), Reverse: RevOps(r[offSTTReverse]), Imm0Src: ImmSrc(r[offSTTImmSrc]),
		In0: Dtype(r[offSTTDtypes] & 0xF), In1: Dtype(r[offSTTDtypes] >> 4), OutDtype: Dtype(r[offSTTOutDtype]),
		Channels: r[offSTTChannels], ImmDtype: Dtype(r[offSTTImmDtype]), AccumCmd: r[offSTTAccum],
		Reserved: [3]byte(r[offSTTReserved : offSTTReserved+3]), Imm0: r.u32(offSTTImm0),
	}
}

// NewSTT lays s out as a record of op (0x9D, 0x9E or 0xE5).
func NewSTT(op Opcode, s STT) *Record {
	r := NewRecord(op)
	r.putTensor2D(offSTTSrc0, s.Src0)
	r.putTensor2D(offSTTSrc1, s.Src1)
	r.putTensor2D(offSTTDst, s.Dst)
	r[offSTTOp0], r[offSTTOp1], r[offSTTReverse], r[offSTTImmSrc] = byte(s.Op0), byte(s.Op1), byte(s.Reverse), byte(s.Imm0Src)
	r[offSTTDtypes], r[offSTTOutDtype] = byte(s.In0&0xF)|byte(s.In1)<<4, byte(s.OutDtype)
	r[offSTTChannels], r[offSTTImmDtype], r[offSTTAccum] = s.Channels, byte(s.ImmDtype), s.AccumCmd
	copy(r[offSTTReserved:], s.Reserved[:])
	r.put32(offSTTImm0, s.Imm0)
	return r
}

// generalArith is is_general_arith_op on generation g.
func generalArith(op ALUOp, g Generation) bool {
	_, ok := tsOps[op]
	return ok && op != aluRsqrt && (g >= GenV4 || !v4Op(op))
}

// valid applies is_valid_scalar_tensor_tensor / _scan's rules for op.
func (s *STT) valid(op Opcode, g Generation) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %v: "+format, append([]any{ErrOperand, op}, a...)...)
	}
	if err := validDtypes(s.Channels, s.OutDtype, false, s.In0, s.In1, s.ImmDtype); err != nil {
		return err
	}
	bitvec := op == OpSTTBitvec
	switch {
	case s.Reserved != [3]byte{} || s.Reverse > RevBoth || s.Imm0Src > ImmRegPtr:
		return bad("reserved % x, reverse %d, imm0_src %d", s.Reserved, s.Reverse, s.Imm0Src)
	case s.Src0.elems() != s.Dst.elems() || s.Src1.elems() != s.Dst.elems():
		return bad("%d, %d source elements, %d destination elements", s.Src0.elems(), s.Src1.elems(), s.Dst.elems())
	case bitvec && (!bitvecValid(s.Op0) || !bitvecValid(s.Op1)):
		return bad("ops %v, %v", s.Op0.tsName(), s.Op1.tsName())
	case bitvec && (!bitvecDtype(s.OutDtype) || s.In0 != s.OutDtype || s.In1 != s.OutDtype || s.ImmDtype != s.OutDtype):
		return bad("bitvec dtypes %v, %v, imm %v -> %v", s.In0, s.In1, s.ImmDtype, s.OutDtype)
	case bitvec && s.AccumCmd != AccIdle, op == OpTensorTensorScan && s.AccumCmd != AccIdle:
		return bad("accumulator_cmd %d", s.AccumCmd)
	case bitvec:
		return nil
	case !generalArith(s.Op0, g) || !generalArith(s.Op1, g):
		return bad("ops %v, %v", s.Op0.tsName(), s.Op1.tsName())
	case s.Imm0Src == ImmInline && s.ImmDtype != DtypeFP32:
		return bad("inline scalar of dtype %v", s.ImmDtype)
	case s.AccumCmd != AccIdle && s.AccumCmd != AccAccumulate && s.AccumCmd != AccZeroAccumulate:
		return bad("accumulator_cmd %d", s.AccumCmd)
	}
	return nil
}

// notEmulated says why a valid record is only counted; "" if it runs.
func (s *STT) notEmulated(op Opcode) string {
	switch {
	case op == OpTensorTensorScan && s.Reverse != RevNone:
		return "reversed scan"
	case op == OpSTTBitvec:
		return ""
	}
	for _, d := range []Dtype{s.In0, s.In1, s.ImmDtype} {
		if dtypes[d].load == nil {
			return d.String()
		}
	}
	if dtypes[s.OutDtype].store == nil {
		return s.OutDtype.String()
	}
	return ""
}
