package seq

import (
	"context"
	"errors"
	"math"
	"testing"
)

// putBF16 stores vs as bf16 (rounded to nearest even) from byte off of
// partition p, and returns the values stored.
func (c *core) putBF16(p int, off uint32, vs []float32) []float32 {
	c.t.Helper()
	b, err := c.mem.Partition(SBUF, p, 0, c.mem.Active(SBUF), true)
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]float32, len(vs))
	for i, v := range vs {
		dtypes[DtypeBF16].store(b[off+uint32(2*i):], v)
		out[i] = dtypes[DtypeBF16].load(b[off+uint32(2*i):])
	}
	return out
}

// runGen runs recs on engine e of a core whose layouts are generation g.
func (c *core) runGen(g Generation, e Engine, recs ...*Record) Result {
	c.t.Helper()
	s := New(Config{Engine: e, Sync: &c.words, Notify: func(n Notification) { c.notes <- n }, OnChip: c.mem, Gen: g})
	c.seqs[e] = s
	return s.Run(context.Background(), ImageProgram(Assemble(0x1000, append(recs, halt())...)))
}

// A K=5, M=3, N=7 bf16 product into PSUM, on each generation's layout:
// the first MATMUL starts the group, the second adds to it. Reference:
// float64 sums of the bf16 inputs; an fp32 sum of K exact products is
// within K·2^-24·Σ|terms| of it, the tolerance used.
func TestMatmul(t *testing.T) {
	const K, M, N = 5, 3, 7
	for _, g := range []Generation{GenV2, GenV3, GenV4} {
		c := newCore(t)
		var stat [K][]float32
		var mov [K][]float32
		for k := range K {
			sv, mv := make([]float32, M), make([]float32, N)
			for m := range sv {
				sv[m] = float32(math.Sin(float64(k*M+m)+0.3)) * 2
			}
			for n := range mv {
				mv[n] = float32(math.Cos(float64(k*N+n)*1.7)) * 3
			}
			stat[k] = c.putBF16(8+k, 0x100, sv)
			mov[k] = c.putBF16(40+k, 0x200, mv)
		}
		lw := LdWeights{Src: contiguous(Addr(SBUF, 8, 0x100), M), InDtype: DtypeBF16, Rows: K, Cols: M, RowGrp: 1, ColGrp: 1}
		mm := Matmul{Src: contiguous(Addr(SBUF, 40, 0x200), N), InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 1, ColGrp: 1,
			Dst: contiguous(Addr(PSUM, 2, 0x40), N)}
		if g != GenV2 {
			mm.OutDtype = DtypeFP32
		}
		add := mm
		add.Accum = AccumStop
		if r := c.runGen(g, PE, NewLdWeights(g, lw), NewMatmul(g, mm), NewMatmul(g, add)); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
			t.Fatalf("V%d: %+v, %d not emulated", g, r, c.seqs[PE].Counts().NotEmulated)
		}
		for m := range M {
			got := c.get32s(PSUM, 2+m, 0x40, N)
			for n := range N {
				var want, mag float64
				for k := range K {
					p := float64(stat[k][m]) * float64(mov[k][n])
					want, mag = want+p, mag+math.Abs(p)
				}
				want, mag = 2*want, 2*mag
				tol := (K + 1) * 0x1p-24 * mag
				if v := float64(math.Float32frombits(got[n])); math.Abs(v-want) > tol {
					t.Errorf("V%d dst[%d,%d] = %v, want %v ± %g", g, m, n, v, want, tol)
				}
			}
		}
	}
}

// Weights latch per quadrant masks (G-PE1): two loads into different
// column groups, then a MATMUL on each, see their own tile.
func TestMatmulLatchPerGroup(t *testing.T) {
	c := newCore(t)
	c.putBF16(0, 0, []float32{2})
	c.putBF16(1, 0, []float32{-3})
	c.putBF16(2, 0, []float32{1, 10})
	g := GenV3
	recs := []*Record{
		NewLdWeights(g, LdWeights{Src: contiguous(Addr(SBUF, 0, 0), 1), InDtype: DtypeBF16, Rows: 1, Cols: 1, RowGrp: 1, ColGrp: 1}),
		NewLdWeights(g, LdWeights{Src: contiguous(Addr(SBUF, 1, 0), 1), InDtype: DtypeBF16, Rows: 1, Cols: 1, RowGrp: 1, ColGrp: 2}),
		NewMatmul(g, Matmul{Src: contiguous(Addr(SBUF, 2, 0), 2), InDtype: DtypeBF16, Accum: AccumStart | AccumStop, RowGrp: 1, ColGrp: 1, Dst: contiguous(Addr(PSUM, 0, 0), 2)}),
		NewMatmul(g, Matmul{Src: contiguous(Addr(SBUF, 2, 0), 2), InDtype: DtypeBF16, Accum: AccumStart | AccumStop, RowGrp: 1, ColGrp: 2, Dst: contiguous(Addr(PSUM, 0, 8), 2)}),
	}
	if r := c.runGen(g, PE, recs...); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	got := c.get32s(PSUM, 0, 0, 4)
	for i, want := range fp32s(2, 20, -3, -30) {
		if got[i] != want {
			t.Errorf("[%d] = %v, want %v", i, math.Float32frombits(got[i]), math.Float32frombits(want))
		}
	}
}

// The V3 layout read from bytes placed by hand at the documented
// offsets (59768285956 §2.4), not through the builder.
func TestMatmulV3Offsets(t *testing.T) {
	r := NewRecord(OpMatmul)
	r.putTensor3D(16, contiguous(0x100, 4))
	r[32], r[33], r[34], r[35], r[40], r[43], r[44], r[45], r[47] = byte(DtypeFP16), 0, 1, 2, byte(DtypeFP32), 3, 4, 8, 2
	r.putTensor3D(48, contiguous(Addr(PSUM, 1, 0), 4))
	mm := r.matmul(peLayouts[GenV3])
	want := Matmul{Src: contiguous(0x100, 4), InDtype: DtypeFP16, Transpose: 1, PerfOpt: 2, OutDtype: DtypeFP32, Accum: 3, RowGrp: 4, ColGrp: 8,
		ZeroRegion: 2, Dst: contiguous(Addr(PSUM, 1, 0), 4)}
	if mm != want {
		t.Errorf("%+v, want %+v", mm, want)
	}
	// V2 has no transpose or out_dtype: the same bytes are reserved there.
	if v2 := r.matmul(peLayouts[GenV2]); v2.Transpose != 0 || v2.OutDtype != 0 || v2.Accum != 3 {
		t.Errorf("V2 read %+v", v2)
	}
	// V4 adds MATMUL_FLAGS at 42.
	r[42] = 0x10
	if v4 := r.matmul(peLayouts[GenV4]); v4.Flags != 0x10 {
		t.Errorf("V4 read %+v", v4)
	}
}

func TestMatmulValidation(t *testing.T) {
	g := GenV3
	lw := NewLdWeights(g, LdWeights{Src: contiguous(0, 2), InDtype: DtypeBF16, Rows: 2, Cols: 2, RowGrp: 15, ColGrp: 15})
	base := Matmul{Src: contiguous(0x100, 4), InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 15, ColGrp: 15, Dst: contiguous(Addr(PSUM, 0, 0), 4)}
	for name, mod := range map[string]func(*Matmul){
		"accumulate 5": func(m *Matmul) { m.Accum = 5 },
		"accumulate 7": func(m *Matmul) { m.Accum = 7 },
		"dtype":        func(m *Matmul) { m.InDtype = 0 },
		"out dtype":    func(m *Matmul) { m.OutDtype = DtypeInt8 },
		"counts":       func(m *Matmul) { m.Dst.Num[0] = 3 },
		"into SBUF":    func(m *Matmul) { m.Dst.Start = 0x400 },
		"bf16 out V3":  func(m *Matmul) { m.OutDtype = DtypeBF16 },
		"fp32 mode":    func(m *Matmul) { m.FP32Mode = FP32ModeLow },
		"no fp32 mode": func(m *Matmul) { m.InDtype = DtypeFP32 },
		"zero region":  func(m *Matmul) { m.ZeroRegion = 4 },
	} {
		c := newCore(t)
		m := base
		mod(&m)
		if r := c.runGen(g, PE, lw, NewMatmul(g, m)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	for name, recs := range map[string][]*Record{
		"no latch":  {NewMatmul(g, base)},
		"other grp": {lw, NewMatmul(g, Matmul{Src: base.Src, InDtype: DtypeBF16, RowGrp: 1, ColGrp: 1, Dst: base.Dst})},
		"fp32 High": {lw, NewMatmul(g, Matmul{Src: base.Src, InDtype: DtypeFP32, FP32Mode: FP32ModeHigh, RowGrp: 15, ColGrp: 15, Dst: base.Dst})},
		"fp8 e3m4 weights": {NewLdWeights(g, LdWeights{Src: contiguous(0, 2), InDtype: DtypeFP8E3, Rows: 2, Cols: 2, RowGrp: 15, ColGrp: 15}),
			NewMatmul(g, base)},
	} {
		c := newCore(t)
		r := c.runGen(g, PE, recs...)
		if n := c.seqs[PE].Counts().NotEmulated; r.State != Halted || n < 1 {
			t.Errorf("%s: %+v, %d not emulated", name, r, n)
		}
	}
	c := newCore(t)
	bad := NewLdWeights(g, LdWeights{Src: contiguous(0, 2), InDtype: DtypeBF16, Rows: 0, Cols: 2})
	if r := c.runGen(g, PE, bad); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
		t.Errorf("0 rows: %+v", r)
	}
}

// A reset forgets the latched weights.
func TestResetForgetsWeights(t *testing.T) {
	c := newCore(t)
	g := GenV3
	c.putBF16(0, 0, []float32{1})
	lw := NewLdWeights(g, LdWeights{Src: contiguous(0, 1), InDtype: DtypeBF16, Rows: 1, Cols: 1, RowGrp: 1, ColGrp: 1})
	mm := NewMatmul(g, Matmul{Src: contiguous(0, 1), InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 1, ColGrp: 1, Dst: contiguous(Addr(PSUM, 0, 0), 1)})
	if r := c.runGen(g, PE, lw); r.State != Halted {
		t.Fatal(r)
	}
	s := c.seqs[PE]
	s.ResetRegisters()
	if r := s.Run(context.Background(), ImageProgram(Assemble(0, mm, halt()))); r.State != Halted || s.Counts().NotEmulated != 1 {
		t.Errorf("%+v, %d not emulated", r, s.Counts().NotEmulated)
	}
}

// A load overwrites the latches it overlaps (sharing a row and a column
// quadrant), so a program cannot make the daemon hold more than the
// array's 16 quadrant tiles; masks beyond the four quadrants stop the
// engine.
func TestLatchEviction(t *testing.T) {
	g := GenV3
	c := newCore(t)
	c.putBF16(0, 0, []float32{1})
	var recs []*Record
	for rg := uint8(15); rg >= 1; rg-- { // (15, 15) first: every later load overlaps it
		for cg := uint8(15); cg >= 1; cg-- {
			recs = append(recs, NewLdWeights(g, LdWeights{Src: contiguous(0, 1), InDtype: DtypeBF16, Rows: 1, Cols: 1, RowGrp: rg, ColGrp: cg}))
		}
	}
	whole := NewMatmul(g, Matmul{Src: contiguous(0, 1), InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 15, ColGrp: 15, Dst: contiguous(Addr(PSUM, 0, 0), 1)})
	if r := c.runGen(g, PE, append(recs, whole)...); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 1 {
		t.Fatalf("%+v, %d not emulated", r, c.seqs[PE].Counts().NotEmulated)
	}
	if n := len(c.seqs[PE].pe.tiles); n > 16 {
		t.Errorf("%d latched tiles", n)
	}
	for _, grp := range [][2]uint8{{0, 1}, {1, 0x10}} {
		c := newCore(t)
		lw := NewLdWeights(g, LdWeights{Src: contiguous(0, 1), InDtype: DtypeBF16, Rows: 1, Cols: 1, RowGrp: grp[0], ColGrp: grp[1]})
		if r := c.runGen(g, PE, lw); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("groups %v: %+v", grp, r)
		}
	}
}
