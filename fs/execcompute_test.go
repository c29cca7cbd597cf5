package fs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/halffloat"
	"github.com/neuronfs/neuronfs/runtime"
)

// computeRig stages programs that move their own data, the way compiled
// programs do: the host puts inputs in HBM and DMA descriptors in a
// queue's rings, and the engines start the queue with CTRL_WR to its
// tail-increment registers, wait for the batch's last copy to raise a
// semaphore, compute on SBUF and PSUM, and start the batch that moves the
// result back to HBM.
type computeRig struct {
	*progClient
	arch    *dhal.ArchFacts
	gen     seq.Generation
	q       *runtime.Queue
	eng     int
	one     *runtime.Mem // a word holding 1: a copy of it raises a semaphore
	sbufDev uint64       // the device address of the core's SBUF
}

// rigQueue is the programs' DMA queue.
const rigQueue = 2

func newComputeRig(t *testing.T, instance string) *computeRig {
	t.Helper()
	c := newProgClientConfig(t, device.Config{Instance: instance})
	arch := c.sys.Arch
	r := &computeRig{progClient: c, arch: arch, gen: seq.Generation(arch.Arch), eng: progCore*arch.DMAEnginesPerCore + 5}
	q, err := c.dev.InitQueue(uint32(r.eng), rigQueue, 64, runtime.AllocOptions{Core: progCore})
	if err != nil {
		t.Fatal(err)
	}
	r.q = q
	r.one = mustMem(t, c.dev, 64, runtime.AllocOptions{Core: progCore})
	if err := r.one.Write(0, []byte{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	// The doorbell arms every queue a process initialised and never rang
	// (the emulator's way to find the exec queue, chip/doorbell.go): one
	// host-rung copy keeps the programs' batches for their CTRL_WRs.
	if err := q.Submit([]runtime.Copy{{Src: r.one.PA, Dst: r.one.PA + 4, Len: 4}}); err != nil {
		t.Fatal(err)
	}
	res, ok := arch.LookupMmapResource(dhal.BlockTPB, progCore, dhal.ResourceSBUF)
	if !ok {
		t.Fatal("no SBUF resource")
	}
	r.sbufDev = res.Offset
	return r
}

// sbuf is the device address of byte off of SBUF partition p.
func (r *computeRig) sbuf(p int, off uint64) uint64 {
	return r.sbufDev + uint64(p)*uint64(seq.SBUF.Stride()) + off
}

// batch writes copies, then one raising semaphore sem, into the queue's
// rings, and returns the records that start them: CTRL_WR to the RX
// (S2M) and TX (M2S) tail increments.
func (r *computeRig) batch(sem uint32, copies ...runtime.Copy) []*seq.Record {
	r.t.Helper()
	semAddr, err := r.dev.SemaphoreAddress(progCore, sem, runtime.SemInc)
	if err != nil {
		r.t.Fatal(err)
	}
	copies = append(copies, runtime.Copy{Src: r.one.PA, Dst: semAddr, Len: 4})
	if err := r.q.WriteDescriptors(r.q.Descriptors(copies)); err != nil {
		r.t.Fatal(err)
	}
	tail := func(side uint64) uint64 {
		return r.arch.CSRBase() + r.arch.UDMABase(r.eng) + side + rigQueue*dhal.UDMAQueueStride + dhal.UDMAQueueTailInc
	}
	n := uint32(len(copies))
	return []*seq.Record{seq.NewCSRWrite(tail(dhal.UDMAS2MQueues), n), seq.NewCSRWrite(tail(dhal.UDMAM2SQueues), n)}
}

// run stages one program per engine behind the inference gate, delivers
// the exec request, rings the doorbell and waits for every engine to
// halt; every record must have been computed.
func (r *computeRig) run(progs map[seq.Engine][]*seq.Record) {
	r.t.Helper()
	var addrs [seq.NumEngines]uint64
	for e, recs := range progs {
		addrs[e] = r.image(append([]*seq.Record{seq.NewWait(seq.WaitSemGE, inferenceStart, 1)}, recs...)...)
	}
	r.deliver(addrs)
	if err := r.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		r.t.Fatal(err)
	}
	r.waitStates(len(progs), seq.Halted)
	for _, e := range r.sys.Device(0).Chip().Core(progCore).EngineReports() {
		if n := e.Counts.NotEmulated; n != 0 {
			r.t.Fatalf("%v only counted %d records (last %v): the test proves nothing", e.Status.Engine, n, e.Counts.LastNotEmulated)
		}
	}
}

// mem allocates n bytes of the core's HBM holding b.
func (r *computeRig) mem(n uint64, b []byte) *runtime.Mem {
	r.t.Helper()
	m := mustMem(r.t, r.dev, n, runtime.AllocOptions{Core: progCore})
	if b != nil {
		if err := m.Write(0, b); err != nil {
			r.t.Fatal(err)
		}
	}
	return m
}

func (r *computeRig) readFP32(m *runtime.Mem, n int) []float32 {
	r.t.Helper()
	b := make([]byte, 4*n)
	if err := m.Read(0, b); err != nil {
		r.t.Fatal(err)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// row is a one-partition-per-row Tensor3D of n contiguous elements.
func row(addr uint32, n int) seq.Tensor3D {
	return seq.Tensor3D{Start: addr, Step: [3]int16{1, 0, 0}, Num: [3]uint16{uint16(n), 1, 1}}
}

func row4(addr uint32, n int) seq.Tensor4D {
	return seq.Tensor4D{Start: addr, Step: [4]int16{1, 0, 0, 0}, Num: [4]uint16{uint16(n), 1, 1, 1}}
}

func bf16s(vs []float32) ([]byte, []float32) {
	b, exact := make([]byte, 2*len(vs)), make([]float32, len(vs))
	for i, v := range vs {
		h := halffloat.FloatToBF16(v)
		binary.LittleEndian.PutUint16(b[2*i:], h)
		exact[i] = halffloat.BF16ToFloat(h)
	}
	return b, exact
}

func fp32s(vs []float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

var computeInstances = []string{"trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"} // V2, V3, V4

// y = relu(x·W + b), end to end on each generation: x (K×N) and W (K×M)
// in bf16 and b (M) in fp32 go from HBM into SBUF by a DMA batch the PE
// starts; the PE latches W (LDWEIGHTS) and multiplies x into PSUM
// (MATMUL, fp32), then raises a semaphore; the ACT applies relu(1·psum +
// b[m]) with a per-partition bias pointer into SBUF as fp32 and starts
// the batch that moves y (M×N) back to HBM. Reference: float64 over the
// bf16-rounded inputs. Tolerance: the fp32 sum's bound (K+2)·2⁻²⁴·(Σ|w·x|
// + |b|); relu is exact.
func TestExecLinearLayerDMA(t *testing.T) {
	for _, inst := range computeInstances {
		t.Run(inst, func(t *testing.T) { linearLayerDMA(t, inst) })
	}
}

func linearLayerDMA(t *testing.T, inst string) {
	const K, M, N = 8, 4, 6
	const semIn, semMM, semOut = 20, 21, 22
	r := newComputeRig(t, inst)
	xv, wv := make([]float32, K*N), make([]float32, K*M)
	for i := range xv {
		xv[i] = float32(math.Cos(float64(5*i+1))) * 1.5
	}
	for i := range wv {
		wv[i] = float32(math.Sin(float64(3*i+2))) / 2
	}
	bias := []float32{0.5, -0.25, 1, -3}
	xb, x := bf16s(xv)
	wb, w := bf16s(wv)
	in := r.mem(4096, append(append(xb, wb...), fp32s(bias)...))
	y := r.mem(4096, nil)
	var load, store []runtime.Copy
	for k := range K {
		load = append(load,
			runtime.Copy{Src: in.PA + uint64(2*N*k), Dst: r.sbuf(k, 0x100), Len: 2 * N},
			runtime.Copy{Src: in.PA + uint64(2*K*N+2*M*k), Dst: r.sbuf(k, 0), Len: 2 * M})
	}
	for m := range M {
		load = append(load, runtime.Copy{Src: in.PA + uint64(2*K*(N+M)+4*m), Dst: r.sbuf(64+m, 0x40), Len: 4})
		store = append(store, runtime.Copy{Src: r.sbuf(64+m, 0x200), Dst: y.PA + uint64(4*N*m), Len: 4 * N})
	}
	mm := seq.NewMatmul(r.gen, seq.Matmul{Src: row(seq.Addr(seq.SBUF, 0, 0x100), N), InDtype: seq.DtypeBF16, OutDtype: seq.DtypeFP32,
		Accum: seq.AccumStart | seq.AccumStop, RowGrp: 1, ColGrp: 1, Dst: row(seq.Addr(seq.PSUM, 0, 0), N)})
	mm.SetEvents(seq.Events{UpdateMode: seq.UpdateSemInc + seq.UpdateCompleted, UpdateIdx: semMM})
	pe := append(r.batch(semIn, load...),
		seq.NewWait(seq.WaitSemGE, semIn, 1),
		seq.NewLdWeights(r.gen, seq.LdWeights{Src: row(seq.Addr(seq.SBUF, 0, 0), M), InDtype: seq.DtypeBF16, Rows: K, Cols: M, RowGrp: 1, ColGrp: 1}),
		mm, seq.NewRecord(seq.OpHalt))
	act := append([]*seq.Record{
		seq.NewWait(seq.WaitSemGE, semMM, 1),
		seq.NewRecord(seq.OpActTableLoad),
		seq.NewActivate(seq.Activate{BiasSrcN: 0, Bias: seq.Addr(seq.SBUF, 64, 0x40), Src: row(seq.Addr(seq.PSUM, 0, 0), N),
			Dst: row(seq.Addr(seq.SBUF, 64, 0x200), N), InDtype: seq.DtypeFP32, BiasDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32,
			Channels: M, Func: 0x02, Scale: seq.FP32(1)}),
	}, append(r.batch(semOut, store...), seq.NewWait(seq.WaitSemGE, semOut, 1), seq.NewRecord(seq.OpHalt))...)
	r.run(map[seq.Engine][]*seq.Record{seq.PE: pe, seq.ACT: act})
	got := r.readFP32(y, M*N)
	for m := range M {
		for n := range N {
			dot, mag := float64(bias[m]), math.Abs(float64(bias[m]))
			for k := range K {
				p := float64(w[M*k+m]) * float64(x[N*k+n])
				dot, mag = dot+p, mag+math.Abs(p)
			}
			want, tol := math.Max(dot, 0), (K+2)*0x1p-24*mag
			if g := float64(got[N*m+n]); math.Abs(g-want) > tol {
				t.Errorf("y[%d,%d] = %v, want %v ± %g", m, n, g, want, tol)
			}
		}
	}
}

// A softmax row, end to end on each generation: R rows of N fp32 values
// go from HBM into SBUF (one row per partition) by a DMA batch the DVE
// starts; the DVE takes −max of each row (TENSOR_REDUCE max, negated);
// the ACT computes e = exp(x − max) (ACTIVATE exp with the per-partition
// bias pointer); the DVE sums e (TENSOR_REDUCE add), inverts the sum
// (RECIPROCAL), multiplies e by it (TENSOR_SCALAR_ARITH with a pointer
// scalar) and moves the rows back to HBM. Reference: float64 softmax.
// Tolerance: exp within 1 fp32 ulp, the sum's (N+1)·2⁻²⁴ bound, the
// reciprocal and product 1 rounding each: 2⁻²⁰·(N+4) relative.
func TestExecSoftmaxDMA(t *testing.T) {
	for _, inst := range computeInstances {
		t.Run(inst, func(t *testing.T) { softmaxDMA(t, inst) })
	}
}

func softmaxDMA(t *testing.T, inst string) {
	const R, N = 3, 16
	const semIn, semMax, semExp, semOut = 20, 21, 22, 23
	const xOff, negMax, eOff, sum, inv, outOff = 0x1000, 0x1100, 0x1200, 0x1104, 0x1108, 0x1300
	r := newComputeRig(t, inst)
	xv := make([]float32, R*N)
	for i := range xv {
		xv[i] = float32(math.Sin(float64(7*i+3)))*4 + float32(i/N)
	}
	in := r.mem(4096, fp32s(xv))
	out := r.mem(4096, nil)
	var load, store []runtime.Copy
	for p := range R {
		load = append(load, runtime.Copy{Src: in.PA + uint64(4*N*p), Dst: r.sbuf(p, xOff), Len: 4 * N})
		store = append(store, runtime.Copy{Src: r.sbuf(p, outOff), Dst: out.PA + uint64(4*N*p), Len: 4 * N})
	}
	sb := func(off uint32) uint32 { return seq.Addr(seq.SBUF, 0, off) }
	reduce := func(op seq.ALUOp, neg uint8, src, dst uint32) *seq.Record {
		return seq.NewS4D4(seq.OpTensorReduce, seq.S4D4{Src: row4(sb(src), N), Dst: row4(sb(dst), 1), InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32,
			Channels: R, Negated: neg, Op: op, OpDim: seq.SubdimX})
	}
	maxRec := reduce(seq.ALUMax, 1, xOff, negMax)
	maxRec.SetEvents(seq.Events{UpdateMode: seq.UpdateSemInc + seq.UpdateCompleted, UpdateIdx: semMax})
	dve := append(r.batch(semIn, load...), seq.NewWait(seq.WaitSemGE, semIn, 1), maxRec,
		seq.NewWait(seq.WaitSemGE, semExp, 1),
		reduce(seq.ALUAdd, 0, eOff, sum),
		seq.NewS4D4(seq.OpReciprocal, seq.S4D4{Src: row4(sb(sum), 1), Dst: row4(sb(inv), 1), InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32, Channels: R}),
		seq.NewTensorScalar(seq.TensorScalar{Src: row(sb(eOff), N), Dst: row(sb(outOff), N), InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32,
			Channels: R, Op0: seq.ALUMult, Imm0Src: seq.ImmPtr, Imm0: sb(inv)}))
	dve = append(append(dve, r.batch(semOut, store...)...), seq.NewWait(seq.WaitSemGE, semOut, 1), seq.NewRecord(seq.OpHalt))
	exp := seq.NewActivate(seq.Activate{BiasSrcN: 0, Bias: sb(negMax), Src: row(sb(xOff), N), Dst: row(sb(eOff), N),
		InDtype: seq.DtypeFP32, BiasDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32, Channels: R, Func: 0x07, Scale: seq.FP32(1)})
	exp.SetEvents(seq.Events{UpdateMode: seq.UpdateSemInc + seq.UpdateCompleted, UpdateIdx: semExp})
	act := []*seq.Record{seq.NewWait(seq.WaitSemGE, semMax, 1), seq.NewRecord(seq.OpActTableLoad), exp, seq.NewRecord(seq.OpHalt)}
	r.run(map[seq.Engine][]*seq.Record{seq.DVE: dve, seq.ACT: act})
	got := r.readFP32(out, R*N)
	for p := range R {
		hi := math.Inf(-1)
		for _, v := range xv[N*p : N*(p+1)] {
			hi = math.Max(hi, float64(v))
		}
		var total float64
		for _, v := range xv[N*p : N*(p+1)] {
			total += math.Exp(float64(v) - hi)
		}
		for i, v := range xv[N*p : N*(p+1)] {
			want := math.Exp(float64(v)-hi) / total
			if g := float64(got[N*p+i]); math.Abs(g-want) > (N+4)*0x1p-20*want {
				t.Errorf("softmax[%d][%d] = %v, want %v", p, i, g, want)
			}
		}
	}
}

// A MATMUL whose accumulate byte the validators reject (5) stops the PE
// alone, at that record, with a TPB_ERROR SEQUENCER_FATAL record in the
// core's ERROR queue; the ACT's program still halts, and nothing is
// written to PSUM.
func TestExecRejectedMatmulStopsEngine(t *testing.T) {
	r := newComputeRig(t, "trn2.48xlarge")
	lw := seq.NewLdWeights(r.gen, seq.LdWeights{Src: row(seq.Addr(seq.SBUF, 0, 0), 2), InDtype: seq.DtypeBF16, Rows: 2, Cols: 2, RowGrp: 1, ColGrp: 1})
	bad := seq.NewMatmul(r.gen, seq.Matmul{Src: row(seq.Addr(seq.SBUF, 0, 0x100), 4), InDtype: seq.DtypeBF16, OutDtype: seq.DtypeFP32,
		Accum: 5, RowGrp: 1, ColGrp: 1, Dst: row(seq.Addr(seq.PSUM, 0, 0), 4)})
	var addrs [seq.NumEngines]uint64
	pe := r.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), lw, bad, seq.NewRecord(seq.OpHalt))
	addrs[seq.PE] = pe
	addrs[seq.ACT] = r.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewRecord(seq.OpHalt))
	r.deliver(addrs)
	if err := r.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	rec := r.next(r.errQ)
	if rec[3]&0x1f != 0x1f || rec[4] != seq.ErrorIDSequencerFatal || rec[5] != byte(seq.PE) {
		t.Errorf("error record %x, want TPB_ERROR, SEQUENCER_FATAL, engine PE", rec)
	}
	testutil.WaitFor(t, "ACT halts", 20*time.Second, func() bool {
		st := r.sys.Device(0).Chip().Core(progCore).EngineStatus()
		return len(st) == 2 && st[1].State == seq.Halted
	})
	st := r.sys.Device(0).Chip().Core(progCore).EngineStatus()
	if st[0].State != seq.Faulted || st[0].Fault.PC != pe+2*seq.RecordSize || !errors.Is(st[0].Fault, seq.ErrOperand) {
		t.Errorf("PE %v, want faulted at %#x with an operand error", st[0], pe+2*seq.RecordSize)
	}
	b, err := r.sys.Device(0).Chip().Core(progCore).OnChip().Partition(seq.PSUM, 0, 0, 16, false)
	if err == nil && !bytes.Equal(b, make([]byte, 16)) {
		t.Errorf("PSUM written by the rejected MATMUL: % x", b)
	}
}
