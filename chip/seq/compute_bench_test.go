package seq

import (
	"context"
	"math"
	"testing"

	"github.com/neuronfs/neuronfs/internal/halffloat"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// The compute records' throughput next to their floors on this host, in
// one run so both see the same minute of a shared machine: benchstat
// -col /impl shows the ratio (scripts/bench.sh).

// loopRecords is a program running body rounds times: after the setup
// records, the body, a counter and a branch back.
func loopRecords(rounds uint32, setup []*Record, body ...*Record) *Image {
	recs := append(append([]*Record{}, setup...), body...)
	recs = append(recs, NewALUImm(ALUAdd, 1, 1, 1), NewBranch(BranchLT, 1, rounds, -int32(len(body)+1)*RecordSize))
	return Assemble(0x10000, append(recs, halt())...)
}

// runLoop runs the loop b.N rounds, timed, on a fresh engine of a core
// whose on-chip memory is mem.
func runLoop(b *testing.B, e Engine, mem OnChip, setup []*Record, body ...*Record) *Sequencer {
	return runLoopOf(b, Config{Engine: e, OnChip: mem, Gen: GenV3}, setup, body...)
}

// runLoopOf is runLoop on an engine configured as cfg.
func runLoopOf(b *testing.B, cfg Config, setup []*Record, body ...*Record) *Sequencer {
	var w Words
	cfg.Sync = &w
	s := New(cfg)
	img := loopRecords(uint32(b.N), setup, body...)
	b.ResetTimer()
	r := s.Run(context.Background(), ImageProgram(img))
	b.StopTimer()
	if r.State != Halted || s.Counts().NotEmulated != 0 {
		b.Fatalf("%+v, %d not emulated", r, s.Counts().NotEmulated)
	}
	return s
}

// fillBF16 stores n bf16 values from byte off of each partition of SBUF
// and returns them as float32, partition-major.
func fillBF16(b *testing.B, mem *OnChipMemory, off uint32, n int) []float32 {
	out := make([]float32, 0, Partitions*n)
	for p := range Partitions {
		buf, err := mem.Partition(SBUF, p, 0, mem.Active(SBUF), true)
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			e := buf[off+uint32(2*i):]
			dtypes[DtypeBF16].store(e, float32(math.Sin(float64(p*n+i))))
			out = append(out, dtypes[DtypeBF16].load(e))
		}
	}
	return out
}

// BenchmarkMatmul: one op is a 128×128 bf16 stationary tile by a
// 128×512 bf16 moving tile into fp32 PSUM. impl=emulated is a loop of
// MATMUL records on a V3 PE; impl=sgemm is gonum's float32 GEMM of the
// same shape, C(128×512) = A(128×128)·B(128×512).
func BenchmarkMatmul(b *testing.B) {
	const K, M, N = 128, 128, 512
	b.Run("impl=emulated", func(b *testing.B) {
		mem := NewOnChipMemory(testSBUFActive)
		fillBF16(b, mem, 0, M)
		fillBF16(b, mem, 0x1000, N)
		lw := NewLdWeights(GenV3, LdWeights{Src: contiguous(0, M), InDtype: DtypeBF16, Rows: K, Cols: M, RowGrp: 15, ColGrp: 15})
		mm := NewMatmul(GenV3, Matmul{Src: contiguous(0x1000, N), InDtype: DtypeBF16, Accum: AccumStart | AccumStop,
			RowGrp: 15, ColGrp: 15, Dst: contiguous(Addr(PSUM, 0, 0), N)})
		runLoop(b, PE, mem, []*Record{lw}, mm)
		b.ReportMetric(2*K*M*N*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("impl=sgemm", func(b *testing.B) {
		mem := NewOnChipMemory(testSBUFActive)
		a := blas32.General{Rows: M, Cols: K, Stride: K, Data: fillBF16(b, mem, 0, K)}
		x := blas32.General{Rows: K, Cols: N, Stride: N, Data: fillBF16(b, mem, 0x1000, N)}
		c := blas32.General{Rows: M, Cols: N, Stride: N, Data: make([]float32, M*N)}
		b.ResetTimer()
		for range b.N {
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, x, 0, c)
		}
		b.StopTimer()
		b.ReportMetric(2*K*M*N*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// elemN is how many elements per partition an element-wise op
// benchmark touches: 128 × 2048 per operand.
const elemN = 2048

// Where the element-wise benchmarks keep their operands in each
// partition: room for 2048 fp32 elements each.
const (
	elemA, elemB, elemD = 0, 0x2000, 0x4000
)

// fillElems stores elemN values of dtype d (fp32 or bf16) in SBUF at off
// of every partition.
func fillElems(b *testing.B, mem *OnChipMemory, off uint32, d Dtype) {
	sz := dtypes[d].size
	for p := range Partitions {
		buf, err := mem.Partition(SBUF, p, off, off+sz*elemN, true)
		if err != nil {
			b.Fatal(err)
		}
		for i := range uint32(elemN) {
			dtypes[d].store(buf[sz*i:], float32(p-int(i))*0.25)
		}
	}
}

// goLoop runs f over the same partitions' bytes as the records do: a
// and c the sources (sa, sc bytes each), d the destination (sd bytes).
func goLoop(b *testing.B, mem *OnChipMemory, sd, sa, sc uint32, f func(d, a, c []byte)) {
	var ds, as, cs [Partitions][]byte
	for p := range Partitions {
		var err error
		if as[p], err = mem.Partition(SBUF, p, elemA, elemA+sa, false); err != nil {
			b.Fatal(err)
		}
		if cs[p], err = mem.Partition(SBUF, p, elemB, elemB+sc, false); err != nil {
			b.Fatal(err)
		}
		if ds[p], err = mem.Partition(SBUF, p, elemD, elemD+sd, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		for p := range Partitions {
			f(ds[p], as[p], cs[p])
		}
	}
	b.StopTimer()
}

func f32at(b []byte, i int) float32      { return math.Float32frombits(le.Uint32(b[4*i:])) }
func put32at(b []byte, i int, v float32) { le.PutUint32(b[4*i:], math.Float32bits(v)) }
func bf16at(b []byte, i int) float32     { return halffloat.BF16ToFloat(le.Uint16(b[2*i:])) }
func putBF16at(b []byte, i int, v float32) {
	le.PutUint16(b[2*i:], halffloat.FloatToBF16(v))
}

// elemCase is one element-wise benchmark: its record, and the plain Go
// loop doing the same to the same bytes (the same dtype conversions, one
// rounding per op as the engine does: float32() keeps a multiply and an
// add from fusing).
type elemCase struct {
	name     string
	rec      *Record
	in, out  Dtype // the sources' and the destination's
	loop     func(d, a, c []byte)
	sources2 bool // the loop reads c too
}

func elemCases() []elemCase {
	all := func(start uint32) Tensor3D { return contiguous(start, elemN) }
	all4 := func(start uint32) Tensor4D {
		return Tensor4D{Start: start, Step: [4]int16{1}, Num: [4]uint16{elemN, 1, 1, 1}}
	}
	tt := func(d Dtype, op ALUOp) *Record {
		return NewTensorTensor(OpTensorTensor, TensorTensor{In0: d, In1: d, OutDtype: d, Op: op, Channels: Partitions,
			Src0: all(elemA), Src1: all(elemB), Dst: all(elemD)})
	}
	return []elemCase{
		{"op=tensor_tensor_add", tt(DtypeFP32, ALUAdd), DtypeFP32, DtypeFP32, func(d, a, c []byte) {
			for i := range elemN {
				put32at(d, i, f32at(a, i)+f32at(c, i))
			}
		}, true},
		{"op=tensor_tensor_mult_bf16", tt(DtypeBF16, ALUMult), DtypeBF16, DtypeBF16, func(d, a, c []byte) {
			for i := range elemN {
				putBF16at(d, i, bf16at(a, i)*bf16at(c, i))
			}
		}, true},
		{"op=ts_arith", NewTensorScalar(TensorScalar{Src: all(elemA), Dst: all(elemD), InDtype: DtypeFP32, OutDtype: DtypeFP32,
			Channels: Partitions, Op0: ALUMult, Op1: ALUAdd, Imm0: math.Float32bits(2), Imm1: math.Float32bits(1)}), DtypeFP32, DtypeFP32,
			func(d, a, _ []byte) {
				for i := range elemN {
					put32at(d, i, float32(f32at(a, i)*2)+1)
				}
			}, false},
		{"op=activate_relu", NewActivate(Activate{BiasSrcN: 1, Src: all(elemA), Dst: all(elemD), InDtype: DtypeFP32, BiasDtype: DtypeFP32,
			OutDtype: DtypeFP32, Channels: Partitions, Func: 0x02, Scale: math.Float32bits(2), Bias: math.Float32bits(1)}), DtypeFP32, DtypeFP32,
			func(d, a, _ []byte) {
				for i := range elemN {
					put32at(d, i, float32(math.Max(float64(float32(2*f32at(a, i))+1), 0)))
				}
			}, false},
		{"op=copy", NewS4D4(OpCopy, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: Partitions, Src: all4(elemA), Dst: all4(elemD)}),
			DtypeFP32, DtypeFP32, func(d, a, _ []byte) { copy(d, a) }, false},
		{"op=cast_fp32_bf16", NewS4D4(OpCast, S4D4{InDtype: DtypeFP32, OutDtype: DtypeBF16, Channels: Partitions, Src: all4(elemA), Dst: all4(elemD)}),
			DtypeFP32, DtypeBF16, func(d, a, _ []byte) {
				for i := range elemN {
					putBF16at(d, i, f32at(a, i))
				}
			}, false},
		{"op=cast_bf16_fp32", NewS4D4(OpCast, S4D4{InDtype: DtypeBF16, OutDtype: DtypeFP32, Channels: Partitions, Src: all4(elemA), Dst: all4(elemD)}),
			DtypeBF16, DtypeFP32, func(d, a, _ []byte) {
				for i := range elemN {
					put32at(d, i, bf16at(a, i))
				}
			}, false},
	}
}

// BenchmarkElementwise: one op is an element-wise pass over 128
// partitions × 2048 elements. impl=emulated is a loop of records on a
// DVE; impl=walker the same with the row fast path off (rows.go), every
// element walked; impl=go is a plain Go loop over the same bytes. The
// bytes are the destination's.
func BenchmarkElementwise(b *testing.B) {
	for _, c := range elemCases() {
		fill := func(b *testing.B) *OnChipMemory {
			mem := NewOnChipMemory(testSBUFActive)
			fillElems(b, mem, elemA, c.in)
			fillElems(b, mem, elemB, c.in)
			b.SetBytes(int64(Partitions * elemN * dtypes[c.out].size))
			return mem
		}
		b.Run(c.name+"/impl=emulated", func(b *testing.B) { runLoop(b, DVE, fill(b), nil, c.rec) })
		b.Run(c.name+"/impl=walker", func(b *testing.B) {
			runLoopOf(b, Config{Engine: DVE, OnChip: fill(b), Gen: GenV3, elementsOnly: true}, nil, c.rec)
		})
		b.Run(c.name+"/impl=go", func(b *testing.B) {
			in, out := elemN*dtypes[c.in].size, elemN*dtypes[c.out].size
			goLoop(b, fill(b), out, in, in, c.loop)
		})
	}
}
