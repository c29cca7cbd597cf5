package seq

import (
	"fmt"
	"math"
)

// TENSOR_TENSOR_ARITH (0x41) and TENSOR_TENSOR_BITVEC (0x51), struct
// S3S3D3_TT (59668120065, 59819273895): on each partition, element i of
// the destination pattern is op(src0[i], src1[i]). The arithmetic form
// computes in fp32 as TENSOR_SCALAR_ARITH does; the bitvec form works
// on the raw bits of integers.

const OpTensorTensorBitvec Opcode = 0x51

// TensorTensor is a decoded S3S3D3_TT record.
type TensorTensor struct {
	In0, In1, OutDtype Dtype // the dtype pair's low and high nibbles, out_dtype
	Op                 ALUOp
	Channels           uint8
	Src0, Src1, Dst    Tensor3D
}

// TensorTensor decodes r as S3S3D3_TT.
func (r *Record) TensorTensor() TensorTensor {
	return TensorTensor{
		In0: Dtype(r[offTTDtypes] & 0xF), In1: Dtype(r[offTTDtypes] >> 4), OutDtype: Dtype(r[offTTOutDtype]),
		Op: ALUOp(r[offTTOp]), Channels: r[offTTChannels],
		Src0: r.tensor3D(offTTSrc0), Src1: r.tensor3D(offTTSrc1), Dst: r.tensor3D(offTTDst),
	}
}

// NewTensorTensor lays tt out as a record of op (0x41 or 0x51).
func NewTensorTensor(op Opcode, tt TensorTensor) *Record {
	r := NewRecord(op)
	r[offTTDtypes] = byte(tt.In0&0xF) | byte(tt.In1)<<4
	r[offTTOutDtype], r[offTTOp], r[offTTChannels] = byte(tt.OutDtype), byte(tt.Op), tt.Channels
	r.putTensor3D(offTTSrc0, tt.Src0)
	r.putTensor3D(offTTSrc1, tt.Src1)
	r.putTensor3D(offTTDst, tt.Dst)
	return r
}

// ttArithValid is whether the arithmetic form accepts op: the general
// arithmetic set, POW, and the integer band but its arg-max/min
// (59668120065 §3.3).
func ttArithValid(op ALUOp) bool {
	switch {
	case op == aluRsqrt:
		return false
	case op == aluPow || op == aluMod:
		return true
	case op >= 0xC4 && op <= 0xDD:
		return true
	}
	_, ok := tsOps[op]
	return ok
}

const (
	aluPow ALUOp = 0x1A
	aluMod ALUOp = 0x1B
)

// ttOp is the arithmetic form's function for op: the tensor-scalar ops,
// and POW (a^b, evaluated in float64 and rounded once; the POOL's
// algorithm is not given, G-TT1). nil: valid but counted.
func ttOp(op ALUOp) func(a, b float32) float32 {
	if op == aluPow {
		return func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) }
	}
	return tsOps[op].f
}

func integer(d Dtype) bool {
	switch d {
	case DtypeInt8, DtypeUint8, DtypeInt16, DtypeUint16, DtypeInt32, DtypeUint32, DtypeInt64, DtypeUint64:
		return true
	}
	return false
}

func signedInt(d Dtype) bool {
	return d == DtypeInt8 || d == DtypeInt16 || d == DtypeInt32 || d == DtypeInt64
}

// valid applies the validators' rules for opcode op.
func (tt *TensorTensor) valid(op Opcode, g Generation) error {
	bitvec := op == OpTensorTensorBitvec
	if err := validDtypes(tt.Channels, tt.OutDtype, true, tt.In0, tt.In1); err != nil {
		return err
	}
	switch {
	case bitvec && !bitvecValid(tt.Op), !bitvec && !ttArithValid(tt.Op), g < GenV4 && v4Op(tt.Op):
		return fmt.Errorf("%w: op %v for %v", ErrOperand, tt.Op.tsName(), op)
	case bitvec && (!integer(tt.OutDtype) || tt.In0 != tt.OutDtype || tt.In1 != tt.OutDtype):
		return fmt.Errorf("%w: bitvec dtypes %v, %v -> %v", ErrOperand, tt.In0, tt.In1, tt.OutDtype)
	case tt.Src0.elems() != tt.Dst.elems() || tt.Src1.elems() != tt.Dst.elems():
		return fmt.Errorf("%w: %d, %d source elements, %d destination elements", ErrOperand, tt.Src0.elems(), tt.Src1.elems(), tt.Dst.elems())
	}
	return nil
}

// notEmulated says why a valid record is only counted; "" if it runs.
func (tt *TensorTensor) notEmulated(op Opcode) string {
	if op == OpTensorTensorBitvec {
		return "" // raw bits of any integer width
	}
	for _, d := range []Dtype{tt.In0, tt.In1} {
		if dtypes[d].load == nil {
			return d.String()
		}
	}
	switch {
	case dtypes[tt.OutDtype].store == nil:
		return tt.OutDtype.String()
	case ttOp(tt.Op) == nil:
		return tt.Op.tsName() // POW, MOD, the integer band, the one-operand ops
	}
	return ""
}

// tensorTensor runs a TENSOR_TENSOR record.
func (r *run) tensorTensor(rec *Record) (skipped string, stopped bool, err error) {
	op := rec.Opcode()
	tt := rec.TensorTensor()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := tt.valid(op, r.generation()); err != nil {
		return "", false, err
	}
	n := int(tt.Channels)
	var o [3]operand
	ok, err := r.operands(n, mem, []Tensor4D{tt.Src0.t4(), tt.Src1.t4(), tt.Dst.t4()}, []Dtype{tt.In0, tt.In1, tt.OutDtype}, o[:])
	if err != nil {
		return "", false, err
	}
	if err := psumWrite(o[2], tt.OutDtype); err != nil {
		return "", false, err
	}
	if !ok {
		return "indirect address", false, nil
	}
	if why := tt.notEmulated(op); why != "" {
		return why, false, nil
	}
	if op == OpTensorTensorBitvec {
		w, sgn, bop := dtypes[tt.OutDtype].size, signedInt(tt.OutDtype), tt.Op
		stopped, err = r.zip(n, mem, &o[2], &o[0], &o[1], func(_ int, d, a, b []byte) {
			storeBits(d, w, bitvec(bop, loadBits(a, w), loadBits(b, w), w, sgn))
		})
		return "", stopped, err
	}
	if done, stopped, err := r.rows(n, mem, &o[2], &o[0], &o[1], r.ttRows(&tt), nil); done {
		return "", stopped, err
	}
	in0, in1, out := &dtypes[tt.In0], &dtypes[tt.In1], &dtypes[tt.OutDtype]
	f := ttOp(tt.Op)
	stopped, err = r.zip(n, mem, &o[2], &o[0], &o[1], func(_ int, d, a, b []byte) {
		out.store(d, f(in0.load(a), in1.load(b)))
	})
	return "", stopped, err
}
