package seq

import (
	"context"
	"math"
	"testing"

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
	var w Words
	s := New(Config{Engine: e, Sync: &w, OnChip: mem, Gen: GenV3})
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

// elemN is how many fp32 elements per partition an element-wise op
// benchmark touches: 128 × 2048 × 4 bytes per operand.
const elemN = 2048

// fillFP32 stores fp32 values in SBUF at off of every partition.
func fillFP32(b *testing.B, mem *OnChipMemory, off uint32) {
	for p := range Partitions {
		buf, err := mem.Partition(SBUF, p, off, off+4*elemN, true)
		if err != nil {
			b.Fatal(err)
		}
		for i := range elemN {
			le.PutUint32(buf[4*i:], math.Float32bits(float32(p-i)*0.25))
		}
	}
}

// goLoop runs f over the same partitions' bytes as the records do.
func goLoop(b *testing.B, mem *OnChipMemory, f func(d, a, c []byte)) {
	var ds, as, cs [Partitions][]byte
	for p := range Partitions {
		var err error
		if as[p], err = mem.Partition(SBUF, p, 0, 4*elemN, false); err != nil {
			b.Fatal(err)
		}
		if cs[p], err = mem.Partition(SBUF, p, 0x2000, 0x2000+4*elemN, false); err != nil {
			b.Fatal(err)
		}
		if ds[p], err = mem.Partition(SBUF, p, 0x4000, 0x4000+4*elemN, true); err != nil {
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

// BenchmarkElementwise: one op is an fp32 element-wise pass over 128
// partitions × 2048 elements. impl=emulated is a loop of records on a
// DVE; impl=go is a plain Go loop over the same bytes.
func BenchmarkElementwise(b *testing.B) {
	all := func(start uint32) Tensor3D { return contiguous(start, elemN) }
	recs := map[string]*Record{
		"op=tensor_tensor_add": NewTensorTensor(OpTensorTensor, TensorTensor{In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32,
			Op: ALUAdd, Channels: Partitions, Src0: all(0), Src1: all(0x2000), Dst: all(0x4000)}),
		"op=ts_arith": NewTensorScalar(TensorScalar{Src: all(0), Dst: all(0x4000), InDtype: DtypeFP32, OutDtype: DtypeFP32,
			Channels: Partitions, Op0: ALUMult, Op1: ALUAdd, Imm0: math.Float32bits(2), Imm1: math.Float32bits(1)}),
	}
	loops := map[string]func(d, a, c []byte){
		"op=tensor_tensor_add": func(d, a, c []byte) {
			for i := 0; i+4 <= len(d); i += 4 {
				le.PutUint32(d[i:], math.Float32bits(math.Float32frombits(le.Uint32(a[i:]))+math.Float32frombits(le.Uint32(c[i:]))))
			}
		},
		"op=ts_arith": func(d, a, _ []byte) {
			for i := 0; i+4 <= len(d); i += 4 {
				le.PutUint32(d[i:], math.Float32bits(math.Float32frombits(le.Uint32(a[i:]))*2+1))
			}
		},
	}
	for _, op := range []string{"op=tensor_tensor_add", "op=ts_arith"} {
		b.Run(op+"/impl=emulated", func(b *testing.B) {
			mem := NewOnChipMemory(testSBUFActive)
			fillFP32(b, mem, 0)
			fillFP32(b, mem, 0x2000)
			b.SetBytes(Partitions * elemN * 4)
			runLoop(b, DVE, mem, nil, recs[op])
		})
		b.Run(op+"/impl=go", func(b *testing.B) {
			mem := NewOnChipMemory(testSBUFActive)
			fillFP32(b, mem, 0)
			fillFP32(b, mem, 0x2000)
			b.SetBytes(Partitions * elemN * 4)
			goLoop(b, mem, loops[op])
		})
	}
}
