package seq

import "fmt"

// IOTA (0x7E), struct D4_IOTA (59921122295): a ramp written to the
// destination pattern, on each partition p of the record,
// base + Σ_d idx_d·step_d + p·channel_multiplier in 32-bit integers,
// then converted to the output dtype. No source is read.

// Iota is a decoded IOTA record.
type Iota struct {
	Base       int32
	Step       [4]int16
	Num        [4]uint16
	Reserved   [6]byte // bytes 32, 35 and 40..43: must be 0
	OutDtype   Dtype
	Channels   uint8
	ChannelMul int32
	Dst        Tensor4D
}

// Iota decodes r as D4_IOTA.
func (r *Record) Iota() Iota {
	t := r.tensor4D(offIotaData) // DATA4D has TENSOR4D's shape, base in place of the address
	return Iota{
		Base: int32(t.Start), Step: t.Step, Num: t.Num,
		Reserved: [6]byte{r[offIotaRes0], r[offIotaRes1], r[offIotaRes2], r[offIotaRes2+1], r[offIotaRes2+2], r[offIotaRes2+3]},
		OutDtype: Dtype(r[offIotaOutDtype]), Channels: r[offIotaChannels],
		ChannelMul: int32(r.u32(offIotaChanMul)), Dst: r.tensor4D(offIotaDst),
	}
}

// NewIota lays it out as an IOTA record.
func NewIota(it Iota) *Record {
	r := NewRecord(OpIota)
	r.putTensor4D(offIotaData, Tensor4D{Start: uint32(it.Base), Step: it.Step, Num: it.Num})
	r[offIotaRes0], r[offIotaRes1] = it.Reserved[0], it.Reserved[1]
	copy(r[offIotaRes2:offIotaRes2+4], it.Reserved[2:])
	r[offIotaOutDtype], r[offIotaChannels] = byte(it.OutDtype), it.Channels
	r.put32(offIotaChanMul, uint32(it.ChannelMul))
	r.putTensor4D(offIotaDst, it.Dst)
	return r
}

// valid applies is_valid_iota: reserved zero, any valid output dtype
// (FP32R included), 1..128 partitions, as many ramp elements as
// destination elements.
func (it *Iota) valid() error {
	if err := validDtypes(it.Channels, it.OutDtype, true); err != nil {
		return err
	}
	ramp := Tensor4D{Num: it.Num}
	switch {
	case it.Reserved != [6]byte{}:
		return fmt.Errorf("%w: IOTA reserved % x", ErrOperand, it.Reserved)
	case ramp.elems() != it.Dst.elems():
		return fmt.Errorf("%w: IOTA ramp of %d elements, destination of %d", ErrOperand, ramp.elems(), it.Dst.elems())
	}
	return nil
}

// iotaStores write the ramp's int32 to an integer dtype: the low bits
// (guessed: the ramp is integer arithmetic, a narrower store packs it).
// Float dtypes take the int32 converted to fp32 (RNE), then stored.
func iotaStore(d Dtype) func([]byte, int32) {
	if integer(d) && !d.wide() {
		w := dtypes[d].size
		return func(b []byte, v int32) { storeBits(b, w, uint64(uint32(v))) }
	}
	if st := dtypes[d].store; st != nil && !integer(d) {
		return func(b []byte, v int32) { st(b, float32(v)) }
	}
	return nil
}

// iota runs an IOTA record.
func (r *run) iota(rec *Record) (skipped string, stopped bool, err error) {
	it := rec.Iota()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := it.valid(); err != nil {
		return "", false, err
	}
	var o [1]operand
	ok, err := r.operands(int(it.Channels), mem, []Tensor4D{it.Dst}, []Dtype{it.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[0], it.OutDtype)
	}
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	}
	store := iotaStore(it.OutDtype)
	if store == nil {
		return it.OutDtype.String(), false, nil
	}
	// The ramp walks its own DATA4D shape as the destination walks its
	// pattern: a cursor of element size 1 over the steps gives idx·step.
	ramp := Tensor4D{Step: it.Step, Num: it.Num}
	var rc cursor
	last := -1
	stopped, err = r.zip(int(it.Channels), mem, &o[0], nil, nil, func(p int, d, _, _ []byte) {
		if p != last {
			rc, last = cursor{t: ramp, sz: 1}, p
		}
		v := int64(it.Base) + rc.off + int64(p)*int64(it.ChannelMul)
		store(d, int32(v)) // 32-bit arithmetic wraps (guessed)
		rc.next()
	})
	return "", stopped, err
}
