package seq

import (
	"context"
	"math"
	"testing"
)

// y = gelu(Wᵀx + b) the way a compiler lowers a linear layer on one core
// (research §5): the PE loads W (K=8 partitions × M=4) and multiplies the
// moving x (K × N=6) into PSUM, then bumps a semaphore; the ACT waits for
// it, loads its table set, and applies gelu(1·psum + b[m]) with a
// per-partition bias into SBUF as bf16. Reference: float64 from the bf16
// inputs; tolerance: the product's fp32 sum bound, carried through gelu
// (slope ≤ 1.13), plus half a bf16 step of the output.
func TestLinearLayer(t *testing.T) {
	const K, M, N = 8, 4, 6
	const sem = 9
	c := newCore(t)
	g := GenV3
	var w, x [K][]float32
	for k := range K {
		wv, xv := make([]float32, M), make([]float32, N)
		for m := range wv {
			wv[m] = float32(math.Sin(float64(3*k+m))) / 2
		}
		for n := range xv {
			xv[n] = float32(math.Cos(float64(5*k+n))) * 1.5
		}
		w[k], x[k] = c.putBF16(k, 0, wv), c.putBF16(k, 0x100, xv)
	}
	bias := []float32{0.5, -0.25, 1, 0}
	for m, b := range bias {
		c.put32s(SBUF, 64+m, 0x40, math.Float32bits(b))
	}
	pe := Assemble(0x1000,
		NewLdWeights(g, LdWeights{Src: contiguous(Addr(SBUF, 0, 0), M), InDtype: DtypeBF16, Rows: K, Cols: M, RowGrp: 1, ColGrp: 1}),
		withEvents(NewMatmul(g, Matmul{Src: contiguous(Addr(SBUF, 0, 0x100), N), InDtype: DtypeBF16, OutDtype: DtypeFP32, Accum: AccumStart | AccumStop,
			RowGrp: 1, ColGrp: 1, Dst: contiguous(Addr(PSUM, 0, 0), N)}), Events{UpdateMode: UpdateSemInc + UpdateCompleted, UpdateIdx: sem}),
		halt())
	act := Assemble(0x2000,
		NewWait(WaitSemGE, sem, 1),
		NewRecord(OpActTableLoad),
		NewActivate(Activate{BiasSrcN: 0, Bias: Addr(SBUF, 64, 0x40), Src: contiguous(Addr(PSUM, 0, 0), N), Dst: contiguous(Addr(SBUF, 64, 0x200), N),
			InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeBF16, Channels: M, Func: 0x1F, Scale: FP32(1)}),
		halt())
	for e := range Engine(NumEngines) {
		c.seqs[e] = New(Config{Engine: e, Sync: &c.words, Notify: func(n Notification) { c.notes <- n }, OnChip: c.mem, Gen: g})
	}
	done := c.start(context.Background(), map[Engine]*Image{ACT: act, PE: pe}) // ACT first: it waits
	for e, r := range c.results(done, 2) {
		if r.State != Halted || c.seqs[e].Counts().NotEmulated != 0 {
			t.Fatalf("%v: %+v, %d not emulated", e, r, c.seqs[e].Counts().NotEmulated)
		}
	}
	gelu := func(z float64) float64 { return z * 0.5 * math.Erfc(-z/math.Sqrt2) }
	for m := range M {
		b, _ := c.mem.Partition(SBUF, 64+m, 0x200, 0x200+2*N, false)
		for n := range N {
			var dot, mag float64
			for k := range K {
				p := float64(w[k][m]) * float64(x[k][n])
				dot, mag = dot+p, mag+math.Abs(p)
			}
			want := gelu(dot + float64(bias[m]))
			got := float64(dtypes[DtypeBF16].load(b[2*n:]))
			tol := 1.13*(K+2)*0x1p-24*(mag+1) + math.Abs(want)*0x1p-8
			if math.Abs(got-want) > tol {
				t.Errorf("y[%d,%d] = %v, want %v ± %g", m, n, got, want, tol)
			}
		}
	}
}
