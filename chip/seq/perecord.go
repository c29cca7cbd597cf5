package seq

// The PE array: LDWEIGHTS (0x01) latches a stationary tile of K
// partitions × M elements; MATMUL (0x02) streams a moving tile of K
// partitions × N elements through it and writes
// dst[m, n] (+)= Σ_k stat[k, m]·mov[k, n] to PSUM in fp32: the
// contraction runs over partitions, the output partition is the
// stationary column (59686003097, 59768285956; NKI 56130734486). The
// guesses G-PE1..G-PE7 are in docs/isa.md.

// LdWeights is a decoded LDWEIGHTS record.
type LdWeights struct {
	Src            Tensor3D
	InDtype        Dtype
	Transpose      uint8
	PerfOpt        uint8
	Rows, Cols     uint8 // num_active_rows (K, partitions), num_active_cols (M)
	RowGrp, ColGrp uint8 // quadrant masks: the latch's key (G-PE1)
	BgXpose, Flags uint8 // V4 only
}

// Matmul is a decoded MATMUL record.
type Matmul struct {
	Src            Tensor3D // the moving tile
	InDtype        Dtype
	FP32Mode       uint8
	Transpose      uint8
	PerfOpt        uint8
	OutDtype       Dtype // V3/V4; 0 on V2 (fp32)
	Flags          uint8 // V4 MATMUL_FLAGS
	Accum          uint8 // psum_accumulate_flags
	RowGrp, ColGrp uint8
	ZeroRegion     uint8    // psum_zero_region: 1, 2, 4 or 8 banks (0..3)
	Dst            Tensor3D // PSUM
}

func (r *Record) ldWeights(l *peLayout) LdWeights {
	return LdWeights{
		Src: r.tensor3D(l.lwSrc), InDtype: Dtype(r[l.lwInDtype]), Transpose: r.byteAt(l.lwTranspose),
		PerfOpt: r.byteAt(l.lwPerfOpt), Rows: r[l.lwRows], Cols: r[l.lwCols],
		RowGrp: r[l.lwRowGrp], ColGrp: r[l.lwColGrp], BgXpose: r.byteAt(l.lwBgXpose), Flags: r.byteAt(l.lwFlags),
	}
}

func (r *Record) matmul(l *peLayout) Matmul {
	return Matmul{
		Src: r.tensor3D(l.mmSrc), InDtype: Dtype(r[l.mmInDtype]), FP32Mode: r[l.mmFP32Mode],
		Transpose: r.byteAt(l.mmTranspose), PerfOpt: r.byteAt(l.mmPerfOpt), OutDtype: Dtype(r.byteAt(l.mmOutDtype)),
		Flags: r.byteAt(l.mmFlags), Accum: r[l.mmAccum], RowGrp: r[l.mmRowGrp], ColGrp: r[l.mmColGrp],
		ZeroRegion: r.byteAt(l.mmZeroRegion), Dst: r.tensor3D(l.mmDst),
	}
}

// NewLdWeights lays w out as generation g's LDWEIGHTS record.
func NewLdWeights(g Generation, w LdWeights) *Record {
	l := peLayouts[g]
	r := NewRecord(OpLdWeights)
	r.putTensor3D(l.lwSrc, w.Src)
	r[l.lwInDtype], r[l.lwRows], r[l.lwCols], r[l.lwRowGrp], r[l.lwColGrp] = byte(w.InDtype), w.Rows, w.Cols, w.RowGrp, w.ColGrp
	r.setByteAt(l.lwTranspose, w.Transpose)
	r.setByteAt(l.lwPerfOpt, w.PerfOpt)
	r.setByteAt(l.lwBgXpose, w.BgXpose)
	r.setByteAt(l.lwFlags, w.Flags)
	return r
}

// NewMatmul lays m out as generation g's MATMUL record.
func NewMatmul(g Generation, m Matmul) *Record {
	l := peLayouts[g]
	r := NewRecord(OpMatmul)
	r.putTensor3D(l.mmSrc, m.Src)
	r.putTensor3D(l.mmDst, m.Dst)
	r[l.mmInDtype], r[l.mmFP32Mode], r[l.mmAccum], r[l.mmRowGrp], r[l.mmColGrp] = byte(m.InDtype), m.FP32Mode, m.Accum, m.RowGrp, m.ColGrp
	r.setByteAt(l.mmTranspose, m.Transpose)
	r.setByteAt(l.mmPerfOpt, m.PerfOpt)
	r.setByteAt(l.mmOutDtype, byte(m.OutDtype))
	r.setByteAt(l.mmFlags, m.Flags)
	r.setByteAt(l.mmZeroRegion, m.ZeroRegion)
	return r
}

// The accumulate byte (59674815273, 59686003097): bit 0 starts a group
// (the result overwrites PSUM), otherwise it adds to PSUM; 5 and 7 are
// illegal.
const (
	AccumStart uint8 = 1
	AccumStop  uint8 = 2
	AccumAdd   uint8 = 4
)
