package fs_test

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// BenchmarkBasicInfoUnderCompute: DEVICE_BASIC_INFO's latency on device 0
// of a trn2.48xlarge, idle and then, in the same run and mount, while the
// five engines of all eight of its NeuronCores compute at once (PE a
// 128×128 by 128×512 bf16 MATMUL in a loop, ACT, POOL, DVE and SP a
// 128×2048 fp32 TENSOR_SCALAR pass in a loop), staged through the exec
// queue as the runtime stages programs; b.N calls each. Metrics: the
// calls' p50 and p99 idle (idle-p50-ns, idle-p99-ns) and under load
// (p50-ns, p99-ns), the loaded ÷ idle ratios, the MATMULs the device's
// PEs retired per second under load, and the longest doorbell ioctl
// (which runs the engines it releases inline, for a bounded slice). The
// engines stop when the device is closed
// (TestExecProgramStopsWhenLastUserLeaves).
func BenchmarkBasicInfoUnderCompute(b *testing.B) {
	dir, sys := testutil.Mount(b, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	b.Cleanup(func() {
		if !closed {
			dev.Close()
		}
	})
	cores := uint32(sys.Arch.CoresPerDevice)
	idle := basicInfoLatencies(b, dev, b.N)
	var ring time.Duration
	for nc := range cores {
		ring = max(ring, startCompute(b, dev, nc))
	}
	waitComputing(b, sys, cores)
	// What the doorbells ran inline is published when they hand the
	// engines on: not counted below.
	started, before := time.Now(), publishedMatmuls(sys, cores)
	b.ResetTimer()
	loaded := basicInfoLatencies(b, dev, b.N)
	b.StopTimer()
	checkComputing(b, sys, cores) // still running: nothing starved or faulted
	// An engine publishes its counts at the end of each turn (about a
	// millisecond) and when it stops: close, then count.
	closed = true
	dev.Close()
	stopped := time.Now()
	matmuls := stoppedMatmuls(b, sys, cores) - before
	ip50, ip99 := percentile(idle, 50), percentile(idle, 99)
	p50, p99 := percentile(loaded, 50), percentile(loaded, 99)
	b.ReportMetric(float64(ip50.Nanoseconds()), "idle-p50-ns")
	b.ReportMetric(float64(ip99.Nanoseconds()), "idle-p99-ns")
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(p50)/float64(ip50), "p50-x-idle")
	b.ReportMetric(float64(p99)/float64(ip99), "p99-x-idle")
	b.ReportMetric(float64(ring.Nanoseconds()), "doorbell-max-ns")
	b.ReportMetric(float64(matmuls)/stopped.Sub(started).Seconds(), "matmul/s")
}

// basicInfoLatencies times n DEVICE_BASIC_INFO calls one by one, sorted.
func basicInfoLatencies(b *testing.B, dev *runtime.Device, n int) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, n)
	for i := range lat {
		s := time.Now()
		if _, err := dev.BasicInfo(); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(s)
	}
	slices.Sort(lat)
	return lat
}

// percentile is the q-th percentile of sorted latencies.
func percentile(sorted []time.Duration, q int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*q/100)]
}

// computeBody is engine e's loop body: a MATMUL on PE (after one
// LDWEIGHTS), a TENSOR_SCALAR pass on the others, each engine writing
// its own SBUF or PSUM bytes.
func computeBody(e seq.Engine) (setup, body []*seq.Record) {
	g := seq.GenV3
	if e == seq.PE {
		lw := seq.NewLdWeights(g, seq.LdWeights{Src: flat(0, 128), InDtype: seq.DtypeBF16, Rows: 128, Cols: 128, RowGrp: 15, ColGrp: 15})
		mm := seq.NewMatmul(g, seq.Matmul{Src: flat(0x1000, 512), InDtype: seq.DtypeBF16, Accum: seq.AccumStart | seq.AccumStop,
			RowGrp: 15, ColGrp: 15, Dst: flat(seq.Addr(seq.PSUM, 0, 0), 512)})
		return []*seq.Record{lw}, []*seq.Record{mm}
	}
	ts := seq.NewTensorScalar(seq.TensorScalar{Src: flat(0x4000, 2048), Dst: flat(0x8000+0x2000*uint32(e-1), 2048),
		InDtype: seq.DtypeFP32, OutDtype: seq.DtypeFP32, Channels: 128, Op0: seq.ALUMult, Op1: seq.ALUAdd,
		Imm0: math.Float32bits(2), Imm1: math.Float32bits(1)})
	return nil, []*seq.Record{ts}
}

func flat(a uint32, n uint16) seq.Tensor3D {
	return seq.Tensor3D{Start: a, Step: [3]int16{1, 0, 0}, Num: [3]uint16{n, 1, 1}}
}

// startCompute stages the five loops on core nc, delivers their request
// on the core's exec queue and rings the doorbell; it returns how long
// the doorbell's ioctl took (it runs the released engines inline for a
// while).
func startCompute(b *testing.B, dev *runtime.Device, nc uint32) time.Duration {
	b.Helper()
	var req [0x38]byte
	for e := range seq.Engine(seq.NumEngines) {
		setup, body := computeBody(e)
		recs := append([]*seq.Record{seq.NewWait(seq.WaitSemGE, inferenceStart, 1)}, setup...)
		recs = append(recs, body...)
		recs = append(recs, seq.NewBranch(seq.BranchAlways, 0, 0, -int32(len(body))*seq.RecordSize))
		img, err := dev.Alloc(4096, runtime.AllocOptions{Core: nc})
		if err != nil {
			b.Fatal(err)
		}
		if err := img.Write(0, seq.Assemble(img.PA, recs...).Data); err != nil {
			b.Fatal(err)
		}
		binary.LittleEndian.PutUint32(req[0x04+4*int(e):], uint32(img.PA))
		binary.LittleEndian.PutUint32(req[0x18+4*int(e):], uint32(img.PA>>32))
	}
	binary.LittleEndian.PutUint32(req[0x34:], 1)
	buf, err1 := dev.Alloc(64, runtime.AllocOptions{Core: nc})
	slot, err2 := dev.Alloc(64, runtime.AllocOptions{Core: nc})
	evt, err3 := dev.SemaphoreAddress(nc, 13, dhal.TPBEventsOffset)
	q, err4 := dev.InitQueue(nc*16+3, 6, 64, runtime.AllocOptions{Core: nc})
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := buf.Write(0, req[:]); err != nil {
		b.Fatal(err)
	}
	tx, rx := q.Descriptors([]runtime.Copy{{Src: buf.PA, Dst: slot.PA, Len: 52}, {Src: buf.PA + 0x34, Dst: evt, Len: 4}})
	if err := q.WriteDescriptors(tx, rx); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := dev.Doorbell(nc, inferenceStart, 1); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// publishedMatmuls is how many MATMULs the cores' engines have published.
func publishedMatmuls(sys *device.System, cores uint32) uint64 {
	var n uint64
	for nc := range cores {
		for _, r := range sys.Device(0).Chip().Core(int(nc)).EngineReports() {
			n += r.Counts.ByOpcode[seq.OpMatmul]
		}
	}
	return n
}

// waitComputing waits until every engine of the cores runs its loop and
// published records (at the end of a turn): each has had the processor.
func waitComputing(b *testing.B, sys *device.System, cores uint32) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for nc := range cores {
		for {
			rs := sys.Device(0).Chip().Core(int(nc)).EngineReports()
			running := len(rs) == seq.NumEngines
			for _, r := range rs {
				running = running && r.Status.State == seq.Running && r.Counts.Records > 0
			}
			if running {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("core %d never ran all its engines: %v", nc, rs)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// checkComputing fails unless every engine still runs.
func checkComputing(b *testing.B, sys *device.System, cores uint32) {
	b.Helper()
	for nc := range cores {
		for _, st := range sys.Device(0).Chip().Core(int(nc)).EngineStatus() {
			if st.State != seq.Running {
				b.Errorf("core %d: %v", nc, st)
			}
		}
	}
}

// stoppedMatmuls waits until the cores' engines have stopped, checks each
// computed every record it issued, and returns the MATMULs they retired.
func stoppedMatmuls(b *testing.B, sys *device.System, cores uint32) uint64 {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	var n uint64
	for nc := range cores {
		for {
			rs := sys.Device(0).Chip().Core(int(nc)).EngineReports()
			running := false
			for _, r := range rs {
				running = running || r.Status.State == seq.Running
			}
			if !running {
				for _, r := range rs {
					if r.Counts.NotEmulated != 0 || r.Counts.Records == 0 {
						b.Errorf("core %d: %v, %d records, %d not emulated", nc, r.Status, r.Counts.Records, r.Counts.NotEmulated)
					}
					n += r.Counts.ByOpcode[seq.OpMatmul]
				}
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("core %d still runs a minute after the close", nc)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return n
}
