package chip

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/neuronfs/neuronfs/chip/exectrace"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// A program computes into its core's SBUF with TENSOR_SCALAR_ARITH, then
// starts a DMA queue with CTRL_WR that copies the result from the SBUF
// resource into HBM: the DMA reads what the engine wrote. The trace has
// the tensor-scalar record named by its ops, each CTRL_WR named by the
// queue it starts, and that queue's copies on its own track.
func TestTensorScalarResultReachesDMA(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	w, err := exectrace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestChipWith(t, "trn2.3xlarge", func(cfg *Config) { cfg.Trace = w.Device(0, "neuron0") })
	const nc, done = 1, 6
	f := c.arch
	sbuf, ok := f.LookupMmapResource(dhal.BlockTPB, nc, dhal.ResourceSBUF)
	if !ok {
		t.Fatal("no SBUF resource")
	}
	part := func(p int) uint64 { return sbuf.Offset + uint64(p)*uint64(seq.SBUF.Stride()) }
	in, ok := c.mem.Local(part(32)+0x100, 64)
	if !ok {
		t.Fatal("no SBUF memory")
	}
	for i := range 16 {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(i)))
	}
	q := prepareCSRQueueFrom(t, c, nc, done, part(33))
	ts := seq.TensorScalar{
		Src:     seq.Tensor3D{Start: seq.Addr(seq.SBUF, 32, 0x100), Step: [3]int16{1, 0, 0}, Num: [3]uint16{16, 1, 1}},
		Dst:     seq.Tensor3D{Start: seq.Addr(seq.SBUF, 33, 0), Step: [3]int16{1, 0, 0}, Num: [3]uint16{16, 1, 1}},
		InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32, Channels: 1,
		Op0: seq.ALUMult, Imm0: seq.FP32(3), Op1: seq.ALUAdd, Imm1: seq.FP32(0.5),
	}
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.POOL: seq.Assemble(0x1000,
			seq.NewTensorScalar(ts),
			seq.NewCSRWrite(q.s2m, 2),
			seq.NewCSRWrite(q.m2s, 2),
			seq.NewWait(seq.WaitSemGE, done, 1),
			seq.NewRecord(seq.OpHalt)),
	})
	waitUntil(t, "POOL halts", func() bool { return r.seqs[seq.POOL].Status().State == seq.Halted })
	for i := range 16 {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(q.dst[4*i:])); got != float32(i)*3+0.5 {
			t.Errorf("element %d copied as %v, want %v", i, got, float32(i)*3+0.5)
		}
	}
	stopRun(r)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	names := traceNames(t, path)
	track := "nc1 POOL"
	queue := "dma " + itoa(q.engID) + " q2"
	for _, want := range []string{
		track + "/TENSOR_SCALAR_ARITH mult, add fp32->fp32",
		track + "/CTRL_WR " + queue + " rx tail <- 2",
		track + "/CTRL_WR " + queue + " tx tail <- 2",
		queue + "/copy",
	} {
		if !names[want] {
			t.Errorf("no event %q in the trace; have %v", want, names)
		}
	}
}

// traceNames reads a trace file and returns "track/event" for each of
// its complete events.
func traceNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	tracks := map[[2]int]string{}
	for _, ev := range file.TraceEvents {
		if ev.Ph == "M" && ev.Name == "thread_name" {
			tracks[[2]int{ev.Pid, ev.Tid}] = ev.Args["name"].(string)
		}
	}
	out := map[string]bool{}
	for _, ev := range file.TraceEvents {
		if ev.Ph == "X" {
			out[tracks[[2]int{ev.Pid, ev.Tid}]+"/"+ev.Name] = true
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// A core reset clears PSUM and leaves SBUF, which is device memory.
func TestResetClearsPSUM(t *testing.T) {
	c := newTestChip(t, "trn1.2xlarge")
	m := c.Core(1).OnChip()
	for _, g := range []seq.Region{seq.SBUF, seq.PSUM} {
		b, err := m.Partition(g, 5, 0, m.Active(g), true)
		if err != nil {
			t.Fatal(err)
		}
		if g == seq.SBUF && len(b) != 192<<10 {
			t.Fatalf("V2 SBUF partition of %d bytes", len(b))
		}
		b[0] = 7
	}
	c.Core(1).ResetExec()
	for g, want := range map[seq.Region]byte{seq.SBUF: 7, seq.PSUM: 0} {
		if b, _ := m.Partition(g, 5, 0, m.Active(g), false); b[0] != want {
			t.Errorf("%v after reset: %d, want %d", g, b[0], want)
		}
	}
	if c.Core(0).OnChip() == c.Core(1).OnChip() || c.Core(2) != nil {
		t.Fatal("cores share memory, or a third core exists")
	}
}

// A TENSOR_SCALAR_ARITH record reports to the driver only the SBUF bytes
// its patterns reach on each partition (from the lowest to the highest
// element, a negative step included) and its scalar pointer's word, not
// whole partitions.
func TestTensorScalarTouchesItsSpan(t *testing.T) {
	c, drv := newTestChipDriver(t, "trn2.3xlarge")
	const nc, gate, channels = 1, 3, 2
	ts := seq.TensorScalar{
		// elements 0x200/4 + i - 8j, i < 4, j < 3: bytes 0x1c0..0x20f
		Src:     seq.Tensor3D{Start: seq.Addr(seq.SBUF, 32, 0x200), Step: [3]int16{1, -8, 0}, Num: [3]uint16{4, 3, 1}},
		Dst:     seq.Tensor3D{Start: seq.Addr(seq.SBUF, 40, 0x400), Step: [3]int16{1, 0, 0}, Num: [3]uint16{12, 1, 1}},
		InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32, Channels: channels,
		Op0: seq.ALUMult, Imm0Src: seq.ImmPtr, Imm0: seq.Addr(seq.SBUF, 32, 0x800),
	}
	const want = channels * (0x210 - 0x1c0 + 12*4 + 4)
	a, _ := c.Core(nc).Area()
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.DVE: seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, gate, 1), seq.NewTensorScalar(ts), seq.NewRecord(seq.OpHalt)),
	})
	before := drv.touched.Load()
	a.Apply(ReadWindow+4*gate, Set, 1)
	c.Core(nc).Wake()
	waitUntil(t, "DVE halts", func() bool { return r.seqs[seq.DVE].Status().State == seq.Halted })
	if n := r.seqs[seq.DVE].Counts().NotEmulated; n != 0 {
		t.Fatalf("%d records only counted: the test proves nothing", n)
	}
	if got := drv.touched.Load() - before; got != want {
		t.Errorf("the record touched %d bytes, want %d", got, want)
	}
}
