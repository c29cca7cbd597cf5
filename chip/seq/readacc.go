package seq

import "fmt"

// ACTIVATION_READ_ACCUMULATOR (0x24), struct D1_RD (59857490485): each
// of the record's partitions writes its ACT accumulator (G-ACT2) to the
// one element of the destination pattern, converted from fp32.
// DVE_READ_ACCUMULATOR (0x9B) is the same record on the DVE, whose
// accumulator EXPONENTIAL feeds; there `negated` 1 flips the sign
// (59663222213, 59857490485 §6.2).

const (
	OpActReadAccumulator Opcode = 0x24
	OpDveReadAccumulator Opcode = 0x9B
)

// ReadAccumulator is a decoded D1_RD record.
type ReadAccumulator struct {
	Reserved [16]byte // bytes 12..27: must be 0
	Count    uint32   // dst_element_count: 1
	Dtype    Dtype
	Negated  uint8 // must be 0 on ACT
	Channels uint8
	Tail     [9]byte // bytes 35..43: must be 0
	Dst      Tensor1D
}

// Tensor1D is a TENSOR1D operand: TENSOR3D's shape with one dimension
// (ADDR4, int16 step, uint16 num: 8 bytes). The layout is inferred from
// TENSOR2D's and TENSOR3D's, which the headers give.
type Tensor1D struct {
	Start uint32
	Step  int16
	Num   uint16
}

func (t Tensor1D) t4() Tensor4D {
	return Tensor4D{Start: t.Start, Step: [4]int16{t.Step}, Num: [4]uint16{t.Num, 1, 1, 1}}
}

// ReadAccumulator decodes r as D1_RD.
func (r *Record) ReadAccumulator() ReadAccumulator {
	return ReadAccumulator{
		Reserved: [16]byte(r[offRDReserved : offRDReserved+16]), Count: r.u32(offRDCount),
		Dtype: Dtype(r[offRDDtype]), Negated: r[offRDNegated], Channels: r[offRDChannels],
		Tail: [9]byte(r[offRDTail : offRDTail+9]),
		Dst:  Tensor1D{Start: r.u32(offRDDst), Step: int16(le.Uint16(r[offRDDst+4:])), Num: le.Uint16(r[offRDDst+6:])},
	}
}

// NewReadAccumulator lays a out as an ACTIVATION_READ_ACCUMULATOR record.
func NewReadAccumulator(a ReadAccumulator) *Record {
	r := NewRecord(OpActReadAccumulator)
	copy(r[offRDReserved:], a.Reserved[:])
	r.put32(offRDCount, a.Count)
	r[offRDDtype], r[offRDNegated], r[offRDChannels] = byte(a.Dtype), a.Negated, a.Channels
	copy(r[offRDTail:], a.Tail[:])
	r.put32(offRDDst, a.Dst.Start)
	le.PutUint16(r[offRDDst+4:], uint16(a.Dst.Step))
	le.PutUint16(r[offRDDst+6:], a.Dst.Num)
	return r
}

// valid applies the documented rules: one element, fp32/bf16/fp16 (or
// FP32R) out, negated and the other bytes 0.
func (a *ReadAccumulator) valid(op Opcode) error {
	maxNeg := uint8(0)
	if op == OpDveReadAccumulator {
		maxNeg = 1
	}
	switch {
	case a.Channels == 0 || a.Channels > Partitions:
		return fmt.Errorf("%w: %d active channels", ErrOperand, a.Channels)
	case a.Dtype != DtypeFP32 && a.Dtype != DtypeBF16 && a.Dtype != DtypeFP16 && a.Dtype != DtypeFP32R:
		return fmt.Errorf("%w: ACTIVATION_READ_ACCUMULATOR dtype %v", ErrOperand, a.Dtype)
	case a.Count != 1 || a.Dst.Num != 1:
		return fmt.Errorf("%w: ACTIVATION_READ_ACCUMULATOR of %d (%d) elements", ErrOperand, a.Count, a.Dst.Num)
	case a.Negated > maxNeg || a.Reserved != [16]byte{} || a.Tail != [9]byte{}:
		return fmt.Errorf("%w: %v negated %d, reserved bytes set", ErrOperand, op, a.Negated)
	}
	return nil
}

// readAccumulator runs an ACTIVATION_READ_ACCUMULATOR record.
func (r *run) readAccumulator(rec *Record) (skipped string, stopped bool, err error) {
	a := rec.ReadAccumulator()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := a.valid(rec.Opcode()); err != nil {
		return "", false, err
	}
	var o [1]operand
	ok, err := r.operands(int(a.Channels), mem, []Tensor4D{a.Dst.t4()}, []Dtype{a.Dtype}, o[:])
	if err == nil {
		err = psumWrite(o[0], a.Dtype)
	}
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	case dtypes[a.Dtype].store == nil:
		return a.Dtype.String(), false, nil
	}
	var acc actState // a never-written accumulator reads 0 (guessed)
	if r.act != nil {
		acc = *r.act
	}
	store, lane, sign := dtypes[a.Dtype].store, o[0].pl.p0, float32(1)
	if a.Negated == 1 {
		sign = -1
	}
	stopped, err = r.zip(int(a.Channels), mem, &o[0], nil, nil, func(p int, d, _, _ []byte) { store(d, sign*acc.acc[lane+p]) })
	return "", stopped, err
}
