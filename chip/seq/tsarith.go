package seq

import (
	"fmt"
	"math"
	"strings"
)

// TENSOR_SCALAR_ARITH (S3D3_TS, 59818285506): every element of the source
// pattern, on each of the record's partitions, becomes
// (x op0 s0) op1 s1 in the destination pattern, computed in fp32, with
// reverse_operands flipping either op's operand order and each scalar an
// inline fp32 or read per partition through a pointer.

// ImmSrc says where a tensor-scalar scalar comes from (IMM_SRC).
type ImmSrc uint8

const (
	ImmInline ImmSrc = 0 // the fp32 in the record
	ImmPtr    ImmSrc = 1 // the record holds the ISA address of partition 0's fp32
	ImmRegPtr ImmSrc = 2 // a register (the field's first byte) holds that address
)

// RevOps is reverse_operands: which ops take the scalar first.
type RevOps uint8

const (
	RevNone   RevOps = 0
	RevFirst  RevOps = 1 // s0 op0 x
	RevSecond RevOps = 2 // s1 op1 (x op0 s0)
	RevBoth   RevOps = 3
)

// TensorScalar is a decoded TENSOR_SCALAR_ARITH record.
type TensorScalar struct {
	AccumCmd          uint8   // must be 0 (idle) here
	Reserved          [3]byte // must be 0
	Src, Dst          Tensor3D
	InDtype, OutDtype Dtype
	Channels          uint8 // partitions, 1..128
	Imm0Src, Imm1Src  ImmSrc
	Op0, Op1          ALUOp
	Reverse           RevOps
	Imm0, Imm1        uint32 // fp32 bits, an ISA address, or a register number
}

// TensorScalar decodes r as S3D3_TS.
func (r *Record) TensorScalar() TensorScalar {
	return TensorScalar{
		AccumCmd: r[offTSAccum], Reserved: [3]byte(r[offTSAccum+1 : offTSAccum+4]),
		Src: r.tensor3D(offTSSrc), Dst: r.tensor3D(offTSDst),
		InDtype: Dtype(r[offTSInDtype]), OutDtype: Dtype(r[offTSOutDtype]), Channels: r[offTSChannels],
		Imm0Src: ImmSrc(r[offTSImm0Src]), Imm1Src: ImmSrc(r[offTSImm1Src]),
		Op0: ALUOp(r[offTSOp0]), Op1: ALUOp(r[offTSOp1]), Reverse: RevOps(r[offTSReverse]),
		Imm0: r.u32(offTSImm0), Imm1: r.u32(offTSImm1),
	}
}

// NewTensorScalar lays ts out as a TENSOR_SCALAR_ARITH record.
func NewTensorScalar(ts TensorScalar) *Record {
	r := NewRecord(OpTensorScalar)
	r[offTSAccum] = ts.AccumCmd
	copy(r[offTSAccum+1:], ts.Reserved[:])
	r.putTensor3D(offTSSrc, ts.Src)
	r.putTensor3D(offTSDst, ts.Dst)
	r[offTSInDtype], r[offTSOutDtype], r[offTSChannels] = byte(ts.InDtype), byte(ts.OutDtype), ts.Channels
	r[offTSImm0Src], r[offTSImm1Src] = byte(ts.Imm0Src), byte(ts.Imm1Src)
	r[offTSOp0], r[offTSOp1], r[offTSReverse] = byte(ts.Op0), byte(ts.Op1), byte(ts.Reverse)
	r.put32(offTSImm0, ts.Imm0)
	r.put32(offTSImm1, ts.Imm1)
	return r
}

// FP32 is an fp32 immediate's bits.
func FP32(f float32) uint32 { return math.Float32bits(f) }

// tsOp is an ALU op as a tensor-scalar arithmetic record sees it: valid
// ops the validators accept; f nil: valid but not emulated.
type tsOp struct {
	name string
	f    func(a, b float32) float32
}

// ALUBypass passes its input on: the op1 of a single-op record.
const ALUBypass ALUOp = 0

// The comparisons answer 1 or 0 (guessed encoding).
func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// tsOps are the ALU ops is_general_arith_op accepts (59818285506 §6b);
// any other op stops the engine. RSQRT is valid only alone with zero
// immediates (valid). The one-operand ops (abs, rsqrt, relu, square)
// ignore their second operand (guessed, docs/isa.md G-TS1).
var tsOps = map[ALUOp]tsOp{
	ALUBypass: {"bypass", func(a, _ float32) float32 { return a }},
	ALUAdd:    {"add", func(a, b float32) float32 { return a + b }},
	ALUSub:    {"sub", func(a, b float32) float32 { return a - b }},
	ALUMult:   {"mult", func(a, b float32) float32 { return a * b }},
	ALUMax:    {"max", func(a, b float32) float32 { return max(a, b) }},
	ALUMin:    {"min", func(a, b float32) float32 { return min(a, b) }},
	0x0D:      {"logical_and", func(a, b float32) float32 { return b2f(a != 0 && b != 0) }},
	0x0E:      {"logical_or", func(a, b float32) float32 { return b2f(a != 0 || b != 0) }},
	0x0F:      {"logical_xor", func(a, b float32) float32 { return b2f((a != 0) != (b != 0)) }},
	0x12:      {"is_eq", func(a, b float32) float32 { return b2f(a == b) }},
	0x13:      {"is_gt", func(a, b float32) float32 { return b2f(a > b) }},
	0x14:      {"is_ge", func(a, b float32) float32 { return b2f(a >= b) }},
	0x15:      {"is_le", func(a, b float32) float32 { return b2f(a <= b) }},
	0x16:      {"is_lt", func(a, b float32) float32 { return b2f(a < b) }},
	0x17:      {"abs_diff", func(a, b float32) float32 { return abs32(a - b) }},
	0x18:      {"is_ne", func(a, b float32) float32 { return b2f(a != b) }},
	0x19:      {"abs", func(a, _ float32) float32 { return abs32(a) }},
	aluRsqrt:  {"rsqrt", func(a, _ float32) float32 { return float32(1 / math.Sqrt(float64(a))) }},
	0x20:      {"abs_max", func(a, b float32) float32 { return max(abs32(a), abs32(b)) }},
	0x21:      {"abs_min", func(a, b float32) float32 { return min(abs32(a), abs32(b)) }},
	0x22:      {"relu", func(a, _ float32) float32 { return max(a, 0) }},
	0x23:      {"square", func(a, _ float32) float32 { return a * a }},
}

// abs32 clears the sign bit: exact, NaN payloads kept.
func abs32(a float32) float32 { return math.Float32frombits(math.Float32bits(a) &^ (1 << 31)) }

// v4Ops are the ALU ops only the MARIANA (V4) enum has (59818285506 §6a):
// an earlier generation's validators reject them.
func v4Op(op ALUOp) bool { return op >= 0x20 && op <= 0x23 }

const aluRsqrt ALUOp = 0x1D

func (op ALUOp) tsName() string {
	if o, ok := tsOps[op]; ok {
		return o.name
	}
	if n, ok := bitvecNames[op]; ok {
		return n
	}
	if op == aluPow {
		return "pow"
	}
	return fmt.Sprintf("op%#02x", uint8(op))
}

// valid applies the validators' field rules (59818285506 §4b, §6b, §8)
// for form f on generation g; the operands' placement is checked as
// they are resolved.
func (ts *TensorScalar) valid(f tsForm, g Generation) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrOperand}, a...)...)
	}
	_, inOK := ts.InDtype.info()
	_, outOK := ts.OutDtype.info()
	switch {
	case ts.AccumCmd != 0 || ts.Reserved != [3]byte{}:
		return bad("accumulator_cmd %d, reserved % x", ts.AccumCmd, ts.Reserved)
	case !inOK || ts.InDtype == DtypeFP32R || !outOK:
		return bad("dtypes %v -> %v", ts.InDtype, ts.OutDtype)
	case ts.Channels == 0 || ts.Channels > Partitions:
		return bad("%d active channels", ts.Channels)
	case ts.Imm0Src > ImmRegPtr || ts.Imm1Src > ImmRegPtr || ts.Reverse > RevBoth:
		return bad("imm sources %d, %d, reverse %d", ts.Imm0Src, ts.Imm1Src, ts.Reverse)
	case f.ptr && (ts.Imm0Src != 0 || ts.Imm1Src != 0):
		return bad("pointer form with imm sources %d, %d", ts.Imm0Src, ts.Imm1Src)
	case ts.Op0 == ALUBypass && ts.Op1 != ALUBypass:
		return bad("op1 %v after a bypassed op0", ts.Op1.tsName())
	case ts.Src.elems() != ts.Dst.elems():
		return bad("%d source elements, %d destination elements", ts.Src.elems(), ts.Dst.elems())
	}
	if f.bitvec {
		return ts.validBitvec(f, bad)
	}
	_, op0OK := tsOps[ts.Op0]
	_, op1OK := tsOps[ts.Op1]
	rsqrt := ts.Op0 == aluRsqrt && ts.Op1 == ALUBypass && ts.Imm0 == 0 && ts.Imm1 == 0 && ts.Imm0Src == 0 && ts.Imm1Src == 0 && !f.ptr
	switch {
	case !op0OK || !op1OK || (ts.Op0 == aluRsqrt || ts.Op1 == aluRsqrt) && !rsqrt:
		return bad("ops %v, %v", ts.Op0.tsName(), ts.Op1.tsName())
	case g < GenV4 && (v4Op(ts.Op0) || v4Op(ts.Op1)):
		return bad("op %v, %v on generation %d", ts.Op0.tsName(), ts.Op1.tsName(), g)
	}
	return nil
}

// notEmulated says why a valid record is only counted; "" if it runs.
func (ts *TensorScalar) notEmulated(f tsForm) string {
	in, _ := ts.InDtype.info()
	out, _ := ts.OutDtype.info()
	switch {
	case f.bitvec && (ts.Op0 == aluCRC32 || ts.Op1 == aluCRC32):
		return "crc32"
	case f.bitvec:
		return ""
	case in.load == nil:
		return ts.InDtype.String()
	case out.store == nil:
		return ts.OutDtype.String()
	case tsOps[ts.Op0].f == nil:
		return ts.Op0.tsName()
	case tsOps[ts.Op1].f == nil:
		return ts.Op1.tsName()
	}
	return ""
}

// Detail names the record in a trace: its ops and dtypes.
func (ts *TensorScalar) Detail() string {
	var b strings.Builder
	b.WriteString(ts.Op0.tsName())
	if ts.Op1 != ALUBypass {
		b.WriteString(", " + ts.Op1.tsName())
	}
	fmt.Fprintf(&b, " %v->%v", ts.InDtype, ts.OutDtype)
	return b.String()
}

// checkEvery is how many elements a record computes between looks at the
// run's stop signal: a pattern may name 2^48 of them.
const checkEvery = 1 << 16

// tensorScalar runs a TENSOR_SCALAR_ARITH record. It returns why the
// record was only counted ("" if it ran), and whether the run was stopped
// in the middle of it.
func (r *run) tensorScalar(rec *Record) (skipped string, stopped bool, err error) {
	f := tsForms[rec.Opcode()]
	ts := rec.TensorScalar()
	if err := ts.valid(f, r.generation()); err != nil {
		return "", false, err
	}
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	n := int(ts.Channels)
	var o [2]operand
	ok, err := r.operands(n, mem, []Tensor4D{ts.Src.t4(), ts.Dst.t4()}, []Dtype{ts.InDtype, ts.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[1], ts.OutDtype)
	}
	if err != nil {
		return "", false, err
	}
	var s [2]scalar
	if err := r.tsScalars(&ts, f, n, mem, &s); err != nil {
		return "", false, err
	}
	if !ok {
		return "indirect address", false, nil
	}
	if why := ts.notEmulated(f); why != "" {
		return why, false, nil
	}
	if f.bitvec {
		stopped, err = r.computeTSBits(&ts, o, s, mem)
		return "", stopped, err
	}
	k, start := r.tsRows(&ts, s[0], s[1], mem)
	if done, stopped, err := r.rows(n, mem, &o[1], &o[0], nil, k, start); done {
		return "", stopped, err
	}
	stopped, err = r.computeTS(&ts, o[0].pl, o[1].pl, s[0], s[1], mem)
	return "", stopped, err
}

// tsScalars resolves the two scalars: the pointer forms read both
// through pointers; an arithmetic pointer reads fp32, a bitvec one an
// element of the input dtype (59818285506 §8).
func (r *run) tsScalars(ts *TensorScalar, f tsForm, n int, mem OnChip, s *[2]scalar) error {
	d := DtypeFP32
	if f.bitvec {
		d = ts.InDtype
	}
	srcs, vals := [2]ImmSrc{ts.Imm0Src, ts.Imm1Src}, [2]uint32{ts.Imm0, ts.Imm1}
	for i := range s {
		if f.ptr {
			srcs[i] = ImmPtr
		}
		if err := r.resolveScalarOf(&s[i], srcs[i], vals[i], d, n, mem); err != nil {
			return err
		}
	}
	return nil
}

// scalar is one of a record's two scalars: inline, or per partition.
type scalar struct {
	v   float32
	raw uint32 // the inline value's bits, a bitvec operand
	ptr *place // per partition: the element at ptr's offset of partition p0+p
	d   Dtype  // the pointed-to element's dtype; 0: fp32
}

// resolveScalarOf resolves a scalar whose pointer form reads dtype d (an
// inline one is always fp32 bits).
func (r *run) resolveScalarOf(s *scalar, src ImmSrc, v uint32, d Dtype, n int, mem OnChip) error {
	s.d = d
	switch src {
	case ImmInline:
		s.v, s.raw = math.Float32frombits(v), v
		return nil
	case ImmRegPtr:
		if v>>8 != 0 || v >= numAddrRegisters {
			return fmt.Errorf("%w: immediate register %#x", ErrOperand, v)
		}
		v = r.regs[v]
	}
	if v > AddrMask {
		return fmt.Errorf("%w: scalar pointer %#x", ErrAperture, v)
	}
	pl, _, err := r.placeTensor(Tensor4D{Start: v, Num: [4]uint16{1, 1, 1, 1}}, d, n, mem)
	if err != nil {
		return err
	}
	s.ptr = &pl
	return nil
}

// at is the scalar on partition p of the record.
func (s scalar) at(mem OnChip, p int) (float32, error) {
	if s.ptr == nil {
		return s.v, nil
	}
	b, err := s.ptr.part(mem, p, false)
	if err != nil {
		return 0, err
	}
	d := s.d
	if d == 0 {
		d = DtypeFP32
	}
	return dtypes[d].load(b), nil
}

// computeTS applies the ops partition by partition; it reports whether
// the run was stopped meanwhile (the record is then left half done, as
// a reset leaves the hardware's).
func (r *run) computeTS(ts *TensorScalar, src, dst place, s0, s1 scalar, mem OnChip) (stopped bool, err error) {
	in, out := &dtypes[ts.InDtype], &dtypes[ts.OutDtype]
	op0, op1 := tsOps[ts.Op0].f, tsOps[ts.Op1].f
	rev0 := ts.Reverse == RevFirst || ts.Reverse == RevBoth
	rev1 := ts.Reverse == RevSecond || ts.Reverse == RevBoth
	bypass0, bypass1 := ts.Op0 == ALUBypass, ts.Op1 == ALUBypass
	count, budget := ts.Src.elems(), checkEvery
	for p := range int(ts.Channels) {
		sb, err1 := src.part(mem, p, false)
		db, err2 := dst.part(mem, p, true)
		a0, err3 := s0.at(mem, p)
		a1, err4 := s1.at(mem, p)
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				return false, err // memory the host refused
			}
		}
		sc, dc := newCursor(ts.Src.t4(), src), newCursor(ts.Dst.t4(), dst)
		for range count {
			if budget--; budget == 0 {
				budget = checkEvery
				if r.stopped() {
					return true, nil
				}
			}
			x := in.load(sb[sc.off:])
			switch {
			case bypass0:
			case rev0:
				x = op0(a0, x)
			default:
				x = op0(x, a0)
			}
			switch {
			case bypass1:
			case rev1:
				x = op1(a1, x)
			default:
				x = op1(x, a1)
			}
			out.store(db[dc.off:], x)
			sc.next()
			dc.next()
		}
	}
	return false, nil
}
