package fs_test

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// starveEngines compute in TestExecComputeLetsIoctlsIn, each on its own
// SBUF bytes; starveSteps is how many times each adds 1 to its tile.
var starveEngines = []seq.Engine{seq.ACT, seq.POOL, seq.DVE, seq.SP}

const (
	starveSteps = 300
	starveElems = 1024 // fp32 per partition: 4 KiB
)

// starveTile is engine e's tile: 4 KiB of every partition, 8 KiB apart.
func starveTile(e seq.Engine) uint32 { return 0x8000 + 0x2000*uint32(e-1) }

// starveProgram zeroes e's tile, adds 1 to every element starveSteps
// times (one TENSOR_SCALAR over the whole tile each) and halts: 1200
// records of 128K elements, whose result is exact in fp32.
func starveProgram(e seq.Engine) []*seq.Record {
	t := flat(starveTile(e), starveElems)
	recs := []*seq.Record{
		seq.NewWait(seq.WaitSemGE, inferenceStart, 1),
		seq.NewMemset(seq.Memset{Count: starveElems, Dtype: seq.DtypeFP32, Channels: seq.Partitions, Dst: row4(t.Start, starveElems)}),
	}
	inc := seq.NewTensorScalar(seq.TensorScalar{Src: t, Dst: t, InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32,
		Channels: seq.Partitions, Op0: seq.ALUMult, Op1: seq.ALUAdd, Imm0: math.Float32bits(1), Imm1: math.Float32bits(1)})
	for range starveSteps {
		recs = append(recs, inc)
	}
	return append(recs, seq.NewRecord(seq.OpHalt))
}

// While four engines of a core run a long compute program, the doorbell
// that starts them and DEVICE_BASIC_INFO on the same device each answer
// within the driver's budget for a command that does not wait (a doorbell
// runs engines inline for a bounded slice, then they take turns on the
// chip's engine goroutines), and the program still ends with every
// element right.
func TestExecComputeLetsIoctlsIn(t *testing.T) {
	c := newProgClient(t)
	budget := c.sys.Budget(0)
	var addrs [seq.NumEngines]uint64
	for _, e := range starveEngines {
		prog := starveProgram(e)
		m := mustMem(t, c.dev, uint64(len(prog))*seq.RecordSize, runtime.AllocOptions{Core: progCore})
		if err := m.Write(0, seq.Assemble(m.PA, prog...).Data); err != nil {
			t.Fatal(err)
		}
		addrs[e] = m.PA
	}
	c.deliver(addrs)
	if d := timed(t, func() error { return c.dev.Doorbell(progCore, inferenceStart, 1) }); d > budget {
		t.Errorf("the doorbell took %v, over the budget of %v", d, budget)
	}
	core := c.sys.Device(0).Chip().Core(progCore)
	computing := func() bool {
		rs := core.EngineReports()
		ok := len(rs) == len(starveEngines)
		for _, r := range rs {
			ok = ok && r.Status.State == seq.Running && r.Counts.Records > 1
		}
		return ok
	}
	testutil.WaitFor(t, "every engine computing", time.Minute, computing)
	for range 20 {
		if d := timed(t, func() error { _, err := c.dev.BasicInfo(); return err }); d > budget {
			t.Errorf("DEVICE_BASIC_INFO took %v under compute, over the budget of %v", d, budget)
		}
	}
	if !computing() {
		t.Fatalf("the program ended before the ioctls did, so they did not run under load: %v", core.EngineStatus())
	}
	c.waitStatesFor(len(starveEngines), seq.Halted, 5*time.Minute)
	for _, e := range starveEngines {
		checkStarveTile(t, core.OnChip(), e)
	}
}

// checkStarveTile checks every element of e's tile is starveSteps.
func checkStarveTile(t *testing.T, mem seq.OnChip, e seq.Engine) {
	t.Helper()
	lo := starveTile(e)
	for p := range seq.Partitions {
		b, err := mem.Partition(seq.SBUF, p, lo, lo+4*starveElems, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range starveElems {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); v != starveSteps {
				t.Fatalf("%v: partition %d element %d = %v, want %d", e, p, i, v, starveSteps)
			}
		}
	}
}

// timed runs f, fails the test on its error, and returns how long it took.
func timed(t *testing.T, f func() error) time.Duration {
	t.Helper()
	s := time.Now()
	if err := f(); err != nil {
		t.Fatal(err)
	}
	return time.Since(s)
}
