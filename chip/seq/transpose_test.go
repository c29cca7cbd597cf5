package seq

import (
	"errors"
	"testing"
)

// STREAM_TRANSPOSE on 64 channels of 64 int32 elements (2x2 tiles of
// 32x32): element k of channel c lands at 32·(k/32) + c%32 of channel
// 32·(c/32) + k%32 (G-DV3); bit-exact. A 32-element destination keeps
// only the first tile's column.
func TestStreamTranspose(t *testing.T) {
	for _, dn := range []uint16{64, 32} {
		c := newCore(t)
		for ch := range 64 {
			for k := range 64 {
				c.put32s(SBUF, ch, uint32(4*k), uint32(ch*1000+k))
			}
			c.put32s(SBUF, ch, 0x200, make([]uint32, 64)...)
		}
		s := S4D4{InDtype: DtypeInt32, OutDtype: DtypeInt32, Channels: 64, Src: seq4(0, 64), Dst: seq4(0x200, dn)}
		if r := c.run1(DVE, NewS4D4(OpStreamTranspose, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 0 {
			t.Fatalf("%+v", r)
		}
		for ch := range 64 {
			got := c.get32s(SBUF, ch, 0x200, 64)
			for j := range 64 {
				want := uint32(0)
				if j < int(dn) {
					src, k := ch/32*32+j%32, j/32*32+ch%32
					want = uint32(src*1000 + k)
				}
				if got[j] != want {
					t.Fatalf("dst %d channel %d [%d] = %d, want %d", dn, ch, j, got[j], want)
				}
			}
		}
	}
}

// The transpose's own rules stop the engine; the partial-tile mask is
// counted.
func TestStreamTransposeValidation(t *testing.T) {
	base := S4D4{InDtype: DtypeBF16, OutDtype: DtypeBF16, Channels: 32, Src: seq4(0, 32), Dst: seq4(0x100, 32)}
	for name, f := range map[string]func(*S4D4){
		"33 channels": func(s *S4D4) { s.Channels = 33 },
		"16 elements": func(s *S4D4) { s.Src.Num[0], s.Dst.Num[0] = 16, 16 },
		"more out":    func(s *S4D4) { s.Dst.Num[0] = 64 },
		"cast":        func(s *S4D4) { s.OutDtype = DtypeFP32 },
		"op add":      func(s *S4D4) { s.Op = ALUAdd },
		"negated":     func(s *S4D4) { s.Negated = 1 },
		"mask 2":      func(s *S4D4) { s.MaskEnable = 2 },
		"u64":         func(s *S4D4) { s.InDtype, s.OutDtype = DtypeUint64, DtypeUint64 },
		"op_dim XY":   func(s *S4D4) { s.OpDim = SubdimXY },
		"reserved":    func(s *S4D4) { s.Reserved[0] = 1 },
	} {
		s := base
		f(&s)
		if r := newCore(t).run1(DVE, NewS4D4(OpStreamTranspose, s)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	s := base
	s.MaskEnable = 1
	c := newCore(t)
	if r := c.run1(DVE, NewS4D4(OpStreamTranspose, s)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
		t.Errorf("mask: %+v", r)
	}
}
