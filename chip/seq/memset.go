package seq

import "fmt"

// MEMSET (0x49), struct D4_MR (60172155822 §5): every element of the
// destination pattern, on each partition, becomes set_value's low bytes
// (the dtype's width): a raw bit pattern, so an fp32 fill is given by
// its bits.

const OpMemset Opcode = 0x49

// Memset is a decoded MEMSET record.
type Memset struct {
	Reserved      [16]byte // must be 0
	Count         uint32   // dst_element_count: the destination's elements, again
	Dtype         Dtype
	Channels      uint8
	Serialization uint8 // serialization_mode: must be Serial
	Value         uint32
	Dst           Tensor4D
}

// Memset decodes r as D4_MR.
func (r *Record) Memset() Memset {
	return Memset{
		Reserved: [16]byte(r[offMRReserved : offMRReserved+16]), Count: r.u32(offMRCount),
		Dtype: Dtype(r[offMRDtype]), Channels: r[offMRChannels], Serialization: r[offMRSerial],
		Value: r.u32(offMRValue), Dst: r.tensor4D(offMRDst),
	}
}

// NewMemset lays m out as a MEMSET record.
func NewMemset(m Memset) *Record {
	r := NewRecord(OpMemset)
	copy(r[offMRReserved:], m.Reserved[:])
	r.put32(offMRCount, m.Count)
	r[offMRDtype], r[offMRChannels], r[offMRSerial] = byte(m.Dtype), m.Channels, m.Serialization
	r.put32(offMRValue, m.Value)
	r.putTensor4D(offMRDst, m.Dst)
	return r
}

// valid applies memset_set_value_type and the shared rules: a 1-, 2- or
// 4-byte dtype whose set_value has no bits beyond its width (FP32R and
// the 64-bit integers are not in the list), reserved bytes zero.
func (m *Memset) valid() error {
	if err := validDtypes(m.Channels, m.Dtype, false); err != nil {
		return err
	}
	switch w := dtypes[m.Dtype].size; {
	case m.Reserved != [16]byte{}:
		return fmt.Errorf("%w: MEMSET reserved % x", ErrOperand, m.Reserved)
	case m.Dtype == DtypeFP32R:
		return fmt.Errorf("%w: MEMSET of %v", ErrOperand, m.Dtype)
	case w < 4 && m.Value>>(8*w) != 0:
		return fmt.Errorf("%w: MEMSET value %#x for %v", ErrOperand, m.Value, m.Dtype)
	}
	return nil
}

// memset runs a MEMSET record.
func (r *run) memset(rec *Record) (skipped string, stopped bool, err error) {
	m := rec.Memset()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := m.valid(); err != nil {
		return "", false, err
	}
	var o [1]operand
	ok, err := r.operands(int(m.Channels), mem, []Tensor4D{m.Dst}, []Dtype{m.Dtype}, o[:])
	if err == nil {
		err = psumWrite(o[0], m.Dtype)
	}
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	case m.Serialization != 0:
		return "serialization_mode", false, nil // Serial's value is not given; 0 is inferred
	case uint64(m.Count) != m.Dst.elems():
		return "dst_element_count", false, nil // whether the validators check it is not given
	}
	w, v := dtypes[m.Dtype].size, uint64(m.Value)
	stopped, err = r.zip(int(m.Channels), mem, &o[0], nil, nil, func(_ int, d, _, _ []byte) { storeBits(d, w, v) })
	return "", stopped, err
}
