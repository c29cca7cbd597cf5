package seq

import (
	"math"
	"testing"
)

// putElems stores vs as dtype d from byte off of partition p of SBUF and
// returns the values the stored elements hold. An fp8 element is the
// byte uint8(v), its value the format's.
func (c *core) putElems(d Dtype, p int, off uint32, vs []float32) []float64 {
	c.t.Helper()
	b, err := c.mem.Partition(SBUF, p, 0, c.mem.Active(SBUF), true)
	if err != nil {
		c.t.Fatal(err)
	}
	in := peInputs[d]
	out := make([]float64, len(vs))
	for i, v := range vs {
		e := b[off+uint32(i)*in.size:]
		if in.size == 1 {
			e[0] = byte(v)
		} else {
			dtypes[d].store(e, v)
		}
		out[i] = float64(in.load(e))
	}
	return out
}

// roundTF32 is v with its significand rounded to 11 bits, ties to even:
// the reference for fp32_mode Low, computed apart from toTF32.
func roundTF32(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	frac, exp := math.Frexp(v)
	return math.Ldexp(math.RoundToEven(math.Ldexp(frac, 11)), exp-11)
}

// fp8Sample is a finite fp8 byte for index i: every exponent below the
// top one, both signs.
func fp8Sample(d Dtype, i int) float32 {
	top := byte(0x78) // e4m3: exponent 1111
	if d == DtypeFP8E5 {
		top = 0x7C
	}
	b := byte(i*37+11) & 0x7F
	if b >= top {
		b -= top
	}
	if i%3 == 0 {
		b |= 0x80
	}
	return float32(b)
}

// A K×M by K×N product for each PE input dtype on each generation,
// N past one 512-column chunk; the first MATMUL starts the group, the
// second (accumulate byte 0, MULTI_MID) adds. Reference: float64 sums of
// the stored inputs (tf32-rounded for fp32_mode Low). Tolerance: an fp32
// sum of K products is within K·2⁻²⁴·Σ|p| of it, products rounded to
// fp32 (fp32 inputs) add as much again, and the second MATMUL's sum and
// its add to PSUM once more: (2K+2)·2⁻²⁴·Σ|p| over both records.
func TestMatmulDtypes(t *testing.T) {
	const K, M, N = 37, 9, 600
	cases := []struct {
		in   Dtype
		mode uint8
		val  func(i int) float32
	}{
		{DtypeBF16, 0, func(i int) float32 { return float32(math.Sin(float64(i)*0.37)) * 3 }},
		{DtypeFP16, 0, func(i int) float32 { return float32(math.Cos(float64(i)*0.91)) * 5 }},
		{DtypeFP32, FP32ModeLowHigh, func(i int) float32 { return float32(math.Sin(float64(i)*1.3)) * 7 }},
		{DtypeFP32, FP32ModeLow, func(i int) float32 { return float32(math.Cos(float64(i)*0.53)) * 2 }},
		{DtypeFP8E4, 0, func(i int) float32 { return fp8Sample(DtypeFP8E4, i) }},
		{DtypeFP8E5, 0, func(i int) float32 { return fp8Sample(DtypeFP8E5, i) }},
	}
	for _, g := range []Generation{GenV2, GenV3, GenV4} {
		for _, tc := range cases {
			c := newCore(t)
			var stat, mov [K][]float64
			for k := range K {
				sv, mv := make([]float32, M), make([]float32, N)
				for m := range sv {
					sv[m] = tc.val(k*M + m)
				}
				for n := range mv {
					mv[n] = tc.val(1000 + k*N + n)
				}
				stat[k] = c.putElems(tc.in, k, 0x100, sv)
				mov[k] = c.putElems(tc.in, 64+k, 0x800, mv)
				if tc.mode == FP32ModeLow {
					for i := range stat[k] {
						stat[k][i] = roundTF32(stat[k][i])
					}
					for i := range mov[k] {
						mov[k][i] = roundTF32(mov[k][i])
					}
				}
			}
			lw := LdWeights{Src: contiguous(Addr(SBUF, 0, 0x100), M), InDtype: tc.in, Rows: K, Cols: M, RowGrp: 15, ColGrp: 15}
			mm := Matmul{Src: contiguous(Addr(SBUF, 64, 0x800), N), InDtype: tc.in, FP32Mode: tc.mode, Accum: AccumStart,
				RowGrp: 15, ColGrp: 15, Dst: contiguous(Addr(PSUM, 3, 0x100), N)}
			add := mm
			add.Accum = 0
			if r := c.runGen(g, PE, NewLdWeights(g, lw), NewMatmul(g, mm), NewMatmul(g, add)); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
				t.Fatalf("V%d %v mode %d: %+v, %d not emulated", g, tc.in, tc.mode, r, c.seqs[PE].Counts().NotEmulated)
			}
			bad := 0
			for m := range M {
				got := c.get32s(PSUM, 3+m, 0x100, N)
				for n := range N {
					var want, mag float64
					for k := range K {
						p := stat[k][m] * mov[k][n]
						want, mag = want+p, mag+math.Abs(p)
					}
					want, mag = 2*want, 2*mag
					tol := (2*K + 2) * 0x1p-24 * mag
					if v := float64(math.Float32frombits(got[n])); !(math.Abs(v-want) <= tol) && bad < 5 {
						bad++
						t.Errorf("V%d %v mode %d: dst[%d,%d] = %v, want %v ± %g", g, tc.in, tc.mode, m, n, v, want, tol)
					}
				}
			}
		}
	}
}

// fp8 bytes decode to the values their layouts give: normal, subnormal,
// largest finite, Inf and NaN (e4m3 keeping IEEE's top exponent, G-PE8).
func TestFP8Decode(t *testing.T) {
	for _, tc := range []struct {
		d    Dtype
		b    byte
		want float64
	}{
		{DtypeFP8E4, 0x38, 1}, {DtypeFP8E4, 0xB8, -1}, {DtypeFP8E4, 0x3C, 1.5}, {DtypeFP8E4, 0x01, 0x1p-9},
		{DtypeFP8E4, 0x08, 0x1p-6}, {DtypeFP8E4, 0x77, 240}, {DtypeFP8E4, 0x78, math.Inf(1)}, {DtypeFP8E4, 0xF8, math.Inf(-1)},
		{DtypeFP8E5, 0x3C, 1}, {DtypeFP8E5, 0xBE, -1.5}, {DtypeFP8E5, 0x01, 0x1p-16}, {DtypeFP8E5, 0x7B, 57344},
		{DtypeFP8E5, 0x7C, math.Inf(1)}, {DtypeFP8E5, 0x00, 0},
	} {
		if got := float64(fp8Formats[tc.d].decode(tc.b)); got != tc.want {
			t.Errorf("%v %#02x = %v, want %v", tc.d, tc.b, got, tc.want)
		}
	}
	for _, b := range []byte{0x79, 0x7F, 0xFF} {
		if v := fp8Formats[DtypeFP8E4].decode(b); !math.IsNaN(float64(v)) {
			t.Errorf("e4m3 %#02x = %v, want NaN", b, v)
		}
	}
	if v := fp8Formats[DtypeFP8E5].decode(0x7D); !math.IsNaN(float64(v)) {
		t.Errorf("e5m2 0x7d = %v, want NaN", v)
	}
}

// V4 writes bf16 to PSUM when out_dtype says so: each record's fp32 sum
// rounds to bf16 (nearest even), and an accumulating record adds its sum
// to the bf16 held there in fp32 and rounds again. Reference: float64,
// rounded the same way; tolerance one bf16 step of the result plus the
// fp32 sums' K·2⁻²⁴·Σ|p|.
func TestMatmulBF16Output(t *testing.T) {
	const K, M, N = 20, 4, 33
	g := GenV4
	c := newCore(t)
	var stat, mov [K][]float64
	for k := range K {
		sv, mv := make([]float32, M), make([]float32, N)
		for m := range sv {
			sv[m] = float32(math.Sin(float64(k*M+m)*0.7)) * 3
		}
		for n := range mv {
			mv[n] = float32(math.Cos(float64(k*N+n)*0.3)) * 2
		}
		stat[k] = c.putElems(DtypeBF16, k, 0, sv)
		mov[k] = c.putElems(DtypeBF16, 32+k, 0, mv)
	}
	lw := LdWeights{Src: contiguous(Addr(SBUF, 0, 0), M), InDtype: DtypeBF16, Rows: K, Cols: M, RowGrp: 1, ColGrp: 1}
	mm := Matmul{Src: contiguous(Addr(SBUF, 32, 0), N), InDtype: DtypeBF16, OutDtype: DtypeBF16, Accum: AccumStart,
		RowGrp: 1, ColGrp: 1, Dst: contiguous(Addr(PSUM, 0, 0x40), N)}
	add := mm
	add.Accum = AccumStop
	if r := c.runGen(g, PE, NewLdWeights(g, lw), NewMatmul(g, mm), NewMatmul(g, add)); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v, %d not emulated", r, c.seqs[PE].Counts().NotEmulated)
	}
	bf := func(v float64) float64 {
		var b [2]byte
		dtypes[DtypeBF16].store(b[:], float32(v))
		return float64(dtypes[DtypeBF16].load(b[:]))
	}
	for m := range M {
		b, err := c.mem.Partition(PSUM, m, 0x40, 0x40+2*N, false)
		if err != nil {
			t.Fatal(err)
		}
		for n := range N {
			var sum, mag float64
			for k := range K {
				p := stat[k][m] * mov[k][n]
				sum, mag = sum+p, mag+math.Abs(p)
			}
			want := bf(bf(sum) + sum)
			tol := math.Abs(want)*0x1p-8 + 2*K*0x1p-24*mag
			if v := float64(dtypes[DtypeBF16].load(b[2*n:])); math.Abs(v-want) > tol {
				t.Errorf("dst[%d,%d] = %v, want %v ± %g", m, n, v, want, tol)
			}
		}
	}
}

// Transpose mode (V3, V4) copies the tile's elements through an identity
// moving tile bit for bit, NaN payloads, signed zeros and Inf included,
// in the tile's own dtype: dst[m, n] = stat[n, m].
func TestMatmulTranspose(t *testing.T) {
	const K, M = 6, 5
	for _, g := range []Generation{GenV3, GenV4} {
		for _, d := range []Dtype{DtypeBF16, DtypeFP32, DtypeFP8E4} {
			c := newCore(t)
			size := peInputs[d].size
			special := []uint32{0x7FC1, 0x8000, 0x7F80, 0xFF81} // bf16 NaN payload, -0, Inf, -NaN
			if d == DtypeFP32 {
				special = []uint32{0x7FC00123, 0x80000000, 0x7F800000, 0xFFA00001}
			} else if d == DtypeFP8E4 {
				special = []uint32{0x7F, 0x80, 0x78, 0xF9}
			}
			var stat [K][M]uint32
			for k := range K {
				b, _ := c.mem.Partition(SBUF, k, 0, 0x1000, true)
				for m := range M {
					v := uint32(k*M+m)*0x01030507 + 0x3F00
					if k == m%K && m < len(special) {
						v = special[m]
					}
					v &= 1<<(8*size) - 1
					stat[k][m] = v
					putBits(b[uint32(m)*size:], size, v)
				}
				id := make([]float32, K)
				id[k] = 1
				if d == DtypeFP8E4 {
					id[k] = 0x38 // 1.0
				}
				c.putElems(d, 32+k, 0x200, id)
			}
			lw := LdWeights{Src: contiguous(Addr(SBUF, 0, 0), M), InDtype: d, Rows: K, Cols: M, RowGrp: 1, ColGrp: 1, Transpose: 1}
			mm := Matmul{Src: contiguous(Addr(SBUF, 32, 0x200), K), InDtype: d, Transpose: 1, Accum: AccumStart | AccumStop,
				RowGrp: 1, ColGrp: 1, Dst: contiguous(Addr(PSUM, 4, 0x80), K)}
			if d == DtypeFP32 {
				mm.FP32Mode = FP32ModeLowHigh
			}
			if r := c.runGen(g, PE, NewLdWeights(g, lw), NewMatmul(g, mm)); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
				t.Fatalf("V%d %v: %+v, %d not emulated", g, d, r, c.seqs[PE].Counts().NotEmulated)
			}
			for m := range M {
				b, _ := c.mem.Partition(PSUM, 4+m, 0x80, 0x80+K*size, false)
				for n := range K {
					if got := rawBits(b[uint32(n)*size:], size); got != stat[n][m] {
						t.Errorf("V%d %v: dst[%d,%d] = %#x, want %#x", g, d, m, n, got, stat[n][m])
					}
				}
			}
		}
	}
}

// Patterns that are not one run of adjacent elements walk their cursors:
// a moving tile read every other element, two dimensions deep, into a
// destination of two dimensions, accumulated onto values already there.
func TestMatmulStrided(t *testing.T) {
	const K, M, N = 5, 3, 12
	g := GenV3
	c := newCore(t)
	var stat [K][]float64
	var mov [K][]float64
	for k := range K {
		sv, mv := make([]float32, M), make([]float32, 2*N)
		for m := range sv {
			sv[m] = float32(k - m)
		}
		for n := range mv {
			mv[n] = float32(n*(k+1)) * 0.5
		}
		stat[k] = c.putElems(DtypeBF16, 10+k, 0, sv)
		mov[k] = c.putElems(DtypeBF16, 20+k, 0x40, mv)
	}
	for m := range M {
		vs := make([]float32, N)
		for n := range vs {
			vs[n] = float32(100 * (m + 1))
		}
		c.put32s(PSUM, 7+m, 0, fp32s(vs...)...)
	}
	src := Tensor3D{Start: Addr(SBUF, 20, 0x40), Step: [3]int16{2, 8, 0}, Num: [3]uint16{4, 3, 1}}
	dst := Tensor3D{Start: Addr(PSUM, 7, 0), Step: [3]int16{1, 4, 0}, Num: [3]uint16{4, 3, 1}}
	lw := LdWeights{Src: contiguous(Addr(SBUF, 10, 0), M), InDtype: DtypeBF16, Rows: K, Cols: M, RowGrp: 1, ColGrp: 1}
	mm := Matmul{Src: src, InDtype: DtypeBF16, Accum: AccumAdd, RowGrp: 1, ColGrp: 1, Dst: dst}
	if r := c.runGen(g, PE, NewLdWeights(g, lw), NewMatmul(g, mm)); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	for m := range M {
		got := c.get32s(PSUM, 7+m, 0, N)
		for n := range N {
			want := float64(100 * (m + 1))
			for k := range K {
				want += stat[k][m] * mov[k][2*n] // element n of the pattern is byte 4n: element 2n
			}
			if v := float64(math.Float32frombits(got[n])); v != want {
				t.Errorf("dst[%d,%d] = %v, want %v", m, n, v, want)
			}
		}
	}
}

// A product large enough to be shared among goroutines (macSplit) gives
// every output partition its own sum: 128 columns, so every share is
// checked against a float64 reference (tolerance as TestMatmul's).
func TestMatmulSplit(t *testing.T) {
	const K, M, N = 64, 128, 80
	g := GenV4
	c := newCore(t)
	var stat, mov [K][]float64
	for k := range K {
		sv, mv := make([]float32, M), make([]float32, N)
		for m := range sv {
			sv[m] = float32(math.Sin(float64(k*M+m) * 0.11))
		}
		for n := range mv {
			mv[n] = float32(math.Cos(float64(k*N+n) * 0.07))
		}
		stat[k] = c.putElems(DtypeBF16, k, 0, sv)
		mov[k] = c.putElems(DtypeBF16, k, 0x400, mv)
	}
	lw := LdWeights{Src: contiguous(Addr(SBUF, 0, 0), M), InDtype: DtypeBF16, Rows: K, Cols: M, RowGrp: 15, ColGrp: 15}
	mm := Matmul{Src: contiguous(Addr(SBUF, 0, 0x400), N), InDtype: DtypeBF16, OutDtype: DtypeFP32, Accum: AccumStart | AccumStop,
		RowGrp: 15, ColGrp: 15, Dst: contiguous(Addr(PSUM, 0, 0), N)}
	if r := c.runGen(g, PE, NewLdWeights(g, lw), NewMatmul(g, mm)); r.State != Halted || c.seqs[PE].Counts().NotEmulated != 0 {
		t.Fatalf("%+v", r)
	}
	bad := 0
	for m := range M {
		got := c.get32s(PSUM, m, 0, N)
		for n := range N {
			var want, mag float64
			for k := range K {
				p := stat[k][m] * mov[k][n]
				want, mag = want+p, mag+math.Abs(p)
			}
			if v := float64(math.Float32frombits(got[n])); !(math.Abs(v-want) <= (K+1)*0x1p-24*mag) && bad < 5 {
				bad++
				t.Errorf("dst[%d,%d] = %v, want %v", m, n, v, want)
			}
		}
	}
}
