package dma

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/internal/halffloat"
)

// Descriptors whose meta_ctrl names a reduction combine the source into
// the destination (dst = op(dst, src)) for each element type; a copy
// descriptor between them still copies; FMA is not emulated and copies.
func TestReductionDescriptors(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	if errno := e.InitQueue(1, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	f32 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	u16 := func(vs ...uint16) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	i32 := func(vs ...int32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		return b
	}
	cases := []struct {
		name          string
		meta          uint32
		dst, src, out []byte
		skew          int // misaligns the buffers (the element-wise path)
	}{
		{"fp32 add", dmadesc.ReduceMeta(dmadesc.CCEAdd, dmadesc.DtypeFP32), f32(1.5, -2, 1e30), f32(2.25, 0.5, 1e30), f32(3.75, -1.5, 2e30), 0},
		{"fp32 max", dmadesc.ReduceMeta(dmadesc.CCEMax, dmadesc.DtypeFP32), f32(1, -2), f32(0, -1), f32(1, -1), 0},
		{"fp32 add unaligned", dmadesc.ReduceMeta(dmadesc.CCEAdd, dmadesc.DtypeFP32), f32(1.5, -2), f32(2.25, 0.5), f32(3.75, -1.5), 1},
		{"fp32 min", dmadesc.ReduceMeta(dmadesc.CCEMin, dmadesc.DtypeFP32), f32(1, -2), f32(0, -1), f32(0, -2), 0},
		// bf16 1.0 = 0x3f80, 2.0 = 0x4000, 3.0 = 0x4040; 256 + 1 rounds to even (256).
		{"bf16 add", dmadesc.ReduceMeta(dmadesc.CCEAdd, dmadesc.DtypeBF16), u16(0x3f80, 0x4380), u16(0x4000, 0x3f80), u16(0x4040, 0x4380), 0},
		// fp16 1.0 = 0x3c00, 0.5 = 0x3800, 1.5 = 0x3e00; 65504 + 65504 overflows to Inf.
		{"fp16 add", dmadesc.ReduceMeta(dmadesc.CCEAdd, dmadesc.DtypeFP16), u16(0x3c00, 0x7bff), u16(0x3800, 0x7bff), u16(0x3e00, 0x7c00), 0},
		{"int32 add wraps", dmadesc.ReduceMeta(dmadesc.CCEAdd, dmadesc.DtypeInt32), i32(-5, math.MaxInt32), i32(7, 1), i32(2, math.MinInt32), 0},
		{"int32 min", dmadesc.ReduceMeta(dmadesc.CCEMin, dmadesc.DtypeInt32), i32(-5, 3), i32(7, 1), i32(-5, 1), 0},
		{"fma copies", 0x2100000 | 3, f32(1, 2), f32(5, 6), f32(5, 6), 0},
		{"default copies", dmadesc.MetaDefault, f32(1, 2), f32(5, 6), f32(5, 6), 0},
	}
	for i, c := range cases {
		src, dst := uint64(memBase+0x10000+i*0x100+c.skew), uint64(memBase+0x20000+i*0x100+c.skew)
		copy(m.B[src-memBase:], c.src)
		copy(m.B[dst-memBase:], c.dst)
		tx, rx := dmadesc.CopyPair(src, dst, uint32(len(c.src)), dmadesc.InitialRingID)
		tx.Meta = c.meta
		b, _ := m.Slice(txRing+uint64(i)*dmadesc.Size, dmadesc.Size)
		tx.Put(b)
		b, _ = m.Slice(rxRing+uint64(i)*dmadesc.Size, dmadesc.Size)
		rx.Put(b)
	}
	if errno := e.Doorbell(1, uint32(len(cases)), uint32(len(cases))); errno != 0 {
		t.Fatal(errno)
	}
	waitIdle(t, e, 1)
	for i, c := range cases {
		dst := 0x20000 + i*0x100 + c.skew
		if got := m.B[dst : dst+len(c.out)]; string(got) != string(c.out) {
			t.Errorf("%s: destination % x, want % x", c.name, got, c.out)
		}
	}
}

// The 16-bit conversions round to nearest even and keep specials.
func TestHalfFloats(t *testing.T) {
	for _, c := range []struct {
		f     float32
		bf    uint16
		half  uint16
		exact bool // f is a binary16 value
	}{
		{1, 0x3f80, 0x3c00, true},
		{-2.5, 0xc020, 0xc100, true},
		{float32(math.Inf(1)), 0x7f80, 0x7c00, true},
		{5.960464477539063e-08, 0x3380, 0x0001, true},    // the smallest binary16 subnormal
		{65520, 0x4780, 0x7c00, false},                   // rounds up past the largest binary16
		{1 + 1.0/1024 + 1.0/2048, 0x3f80, 0x3c02, false}, // a tie rounds to even
	} {
		if got := halffloat.FloatToBF16(c.f); got != c.bf {
			t.Errorf("bf16(%g) = %#x, want %#x", c.f, got, c.bf)
		}
		if got := halffloat.FloatToFP16(c.f); got != c.half {
			t.Errorf("fp16(%g) = %#x, want %#x", c.f, got, c.half)
		}
		if back := halffloat.FP16ToFloat(c.half); c.exact && back != c.f {
			t.Errorf("fp16 %#x reads %g, want %g", c.half, back, c.f)
		}
	}
	if v := halffloat.FloatToBF16(float32(math.NaN())); halffloat.BF16ToFloat(v) == halffloat.BF16ToFloat(v) {
		t.Errorf("bf16 NaN became %#x", v)
	}
}
