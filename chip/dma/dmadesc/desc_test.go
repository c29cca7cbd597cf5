package dmadesc

import "testing"

// A descriptor survives its 16-byte form, and a copy pair says what it
// moves: the length (0 meaning the maximum), the ring id and the packet
// bounds on both sides, the default meta word on TX only.
func TestDescRoundTripAndCopyPair(t *testing.T) {
	tx, rx := CopyPair(0x1000, 0x2000, 64, 2)
	for _, d := range []Desc{tx, rx} {
		b := make([]byte, Size)
		d.Put(b)
		if got := Decode(b); got != d {
			t.Fatalf("decoded %+v, want %+v", got, d)
		}
		if d.Len() != 64 || d.RingID() != 2 || !d.Last() || d.LenCtrl&FlagFirst == 0 {
			t.Errorf("%+v: len %d ring %d last %v", d, d.Len(), d.RingID(), d.Last())
		}
	}
	if tx.Addr != 0x1000 || rx.Addr != 0x2000 || tx.Meta != MetaDefault || rx.Meta != 0 {
		t.Errorf("pair %+v, %+v", tx, rx)
	}
	if full, _ := CopyPair(0, 0, MaxDescLen, InitialRingID); full.Len() != MaxDescLen {
		t.Errorf("a full descriptor moves %d", full.Len())
	}
}

// ReduceOf reads back what ReduceMeta encodes, and a copy is no
// reduction.
func TestReduceMetaRoundTrip(t *testing.T) {
	for _, cce := range []uint32{CCEAdd, CCEMax, CCEMin} {
		for _, dt := range []uint32{DtypeInt8, DtypeBF16, DtypeFP16, DtypeUint32, DtypeFP32} {
			c, d, ok := ReduceOf(ReduceMeta(cce, dt))
			if !ok || c != cce || d != dt {
				t.Errorf("ReduceOf(ReduceMeta(%d, %d)) = %d, %d, %v", cce, dt, c, d, ok)
			}
		}
	}
	if _, _, ok := ReduceOf(MetaDefault); ok {
		t.Error("the default meta word reads as a reduction")
	}
}
