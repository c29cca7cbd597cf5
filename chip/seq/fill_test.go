package seq

import (
	"errors"
	"math"
	"testing"
)

// MEMSET writes set_value's low bytes, bit for bit, into every element
// of a strided destination and nothing between them.
func TestMemset(t *testing.T) {
	cases := []struct {
		d Dtype
		v uint32
	}{
		{DtypeFP32, math.Float32bits(-1.25)},
		{DtypeFP32, 0x7FC0_0BAD}, // a NaN payload stays
		{DtypeBF16, 0x3F80},
		{DtypeInt8, 0xFE},
		{DtypeFP8E4, 0x38},
	}
	for _, tc := range cases {
		c := newCore(t)
		w := dtypes[tc.d].size
		dst := Tensor4D{Start: Addr(SBUF, 20, 0x40), Step: [4]int16{2, 8, 0, 0}, Num: [4]uint16{3, 2, 1, 1}}
		m := Memset{Count: 6, Dtype: tc.d, Channels: 2, Value: tc.v, Dst: dst}
		if r := c.run1(POOL, NewMemset(m)); r.State != Halted || c.seqs[POOL].Counts().NotEmulated != 0 {
			t.Fatalf("%v: %+v", tc.d, r)
		}
		for p := range 2 {
			b, _ := c.mem.Partition(SBUF, 20+p, 0, 0x100, false)
			for i := uint32(0); i < 16; i++ {
				got := loadBits(b[0x40+i*w:], w)
				want := uint64(0)
				if i%2 == 0 && i%8 < 6 {
					want = uint64(tc.v)
				}
				if got != want {
					t.Errorf("%v partition %d element %d = %#x, want %#x", tc.d, p, i, got, want)
				}
			}
		}
	}
}

func TestMemsetValidation(t *testing.T) {
	base := Memset{Count: 4, Dtype: DtypeFP32, Channels: 1, Dst: seq4(0, 4)}
	bad := map[string]func(*Memset){
		"wide value":   func(m *Memset) { m.Dtype, m.Value = DtypeFP16, 0x10000 },
		"int64":        func(m *Memset) { m.Dtype = DtypeInt64 },
		"fp32r":        func(m *Memset) { m.Dtype = DtypeFP32R },
		"reserved":     func(m *Memset) { m.Reserved[3] = 1 },
		"no channels":  func(m *Memset) { m.Channels = 0 },
		"bf16 to PSUM": func(m *Memset) { m.Dtype, m.Dst.Start = DtypeBF16, Addr(PSUM, 0, 0) },
	}
	for name, mod := range bad {
		c := newCore(t)
		m := base
		mod(&m)
		if r := c.run1(DVE, NewMemset(m)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	for name, mod := range map[string]func(*Memset){
		"serialization": func(m *Memset) { m.Serialization = 1 },
		"count":         func(m *Memset) { m.Count = 5 },
	} {
		c := newCore(t)
		m := base
		mod(&m)
		if r := c.run1(DVE, NewMemset(m)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// IOTA: base + Σ idx·step + partition·channel_multiplier, against the
// formula evaluated in int64; fp32 output exact for these magnitudes,
// bf16 rounded to nearest even.
func TestIota(t *testing.T) {
	cases := []struct {
		d   Dtype
		cm  int32
		ref func(v int64) float64
	}{
		{DtypeInt32, 100, func(v int64) float64 { return float64(v) }},
		{DtypeFP32, -7, func(v int64) float64 { return float64(v) }},
		{DtypeBF16, 1000, func(v int64) float64 { return float64(rneBF16(float32(v))) }},
		{DtypeInt16, 3, func(v int64) float64 { return float64(int16(v)) }},
	}
	for _, tc := range cases {
		c := newCore(t)
		it := Iota{Base: -5, Step: [4]int16{3, -10, 0, 50}, Num: [4]uint16{4, 2, 1, 3}, OutDtype: tc.d, Channels: 3, ChannelMul: tc.cm,
			Dst: seq4(Addr(SBUF, 100, 0x80), 24)}
		if r := c.run1(POOL, NewIota(it)); r.State != Halted || c.seqs[POOL].Counts().NotEmulated != 0 {
			t.Fatalf("%v: %+v", tc.d, r)
		}
		w := dtypes[tc.d].size
		for p := range 3 {
			b, _ := c.mem.Partition(SBUF, 100+p, 0x80, 0x200, false)
			i := 0
			for l := range 3 {
				for j := range 2 {
					for k := range 4 {
						v := int64(-5) + int64(3*k-10*j+50*l) + int64(p)*int64(tc.cm)
						got := float64(dtypes[tc.d].load(b[uint32(i)*w:]))
						if want := tc.ref(v); got != want {
							t.Errorf("%v partition %d (%d,%d,%d) = %v, want %v", tc.d, p, k, j, l, got, want)
						}
						i++
					}
				}
			}
		}
	}
}

func TestIotaValidation(t *testing.T) {
	base := Iota{Num: [4]uint16{4, 1, 1, 1}, OutDtype: DtypeInt32, Channels: 1, Dst: seq4(0, 4)}
	for name, mod := range map[string]func(*Iota){
		"count":    func(it *Iota) { it.Num[1] = 2 },
		"reserved": func(it *Iota) { it.Reserved[5] = 1 },
		"dtype":    func(it *Iota) { it.OutDtype = 0 },
	} {
		c := newCore(t)
		it := base
		mod(&it)
		if r := c.run1(POOL, NewIota(it)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
