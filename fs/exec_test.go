package fs_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

const inferenceStart = 0 // any semaphore rings the doorbell by default

// execClient is one core's bring-up as the runtime does it: reset, the
// five INFER_STATUS rings enabled, and an exec queue in device memory that
// the host fills but never rings.
type execClient struct {
	t     *testing.T
	dev   *runtime.Device
	nqs   []*runtime.NQ
	exec  *runtime.Queue
	core  uint32
	ringN uint32
}

func newExecClient(t *testing.T, dir string, core uint32, nqSize uint32) *execClient {
	t.Helper()
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if err := dev.Reset(1 << core); err != nil {
		t.Fatal(err)
	}
	c := &execClient{t: t, dev: dev, core: core}
	for e := range uint32(runtime.ComputeEngines) {
		q, err := dev.InitNQ(core, runtime.NQTypeNotify, runtime.InferStatusSlot+e, nqSize)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		c.nqs = append(c.nqs, q)
	}
	if err := dev.EnableNQs(core, 0x1f<<runtime.InferStatusSlot); err != nil {
		t.Fatal(err)
	}
	for _, q := range c.nqs {
		if tail, err := q.Tail(); err != nil || tail != 0 {
			t.Fatalf("tail of a fresh queue: %d %v", tail, err)
		}
	}
	// The exec queue: engine 3 of the core, rings in HBM.
	c.exec, err = dev.InitQueue(core*16+3, 6, 64, runtime.AllocOptions{Core: core})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stage writes copies into the exec queue without ringing it.
func (c *execClient) stage(copies []runtime.Copy) {
	c.t.Helper()
	// Submit would ring the queue; write the descriptors only.
	tx, rx := c.exec.Descriptors(copies)
	if err := c.exec.WriteDescriptors(tx, rx); err != nil {
		c.t.Fatal(err)
	}
}

// expect reads one record from every engine's ring and checks its code.
func (c *execClient) expect(code uint16) []uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ts []uint64
	for e, q := range c.nqs {
		rec, err := q.Next(ctx)
		if err != nil {
			c.t.Fatalf("engine %d: %v", e, err)
		}
		want := []byte{0x06, 0x0a, 0x0e, 0x12, 0x16}[e]
		if rec[3]&0x1f != want || rec[2]>>4 != 0 || runtime.RecordCode(rec) != code {
			c.t.Fatalf("engine %d record %x, want type %#x code %d", e, rec, want, code)
		}
		ts = append(ts, runtime.RecordTimestamp(rec))
	}
	return ts
}

// One doorbell per architecture: the staged DMA runs, every engine
// reports START then END with the right phase, sysfs counts the run.
func TestExecDoorbell(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			dir, _ := testutil.Mount(t, inst)
			c := newExecClient(t, dir, 1, 64) // 4 records per ring: wraps every 2 runs
			src, dst := mustMem(t, c.dev, 1<<17, runtime.AllocOptions{Host: true}), mustMem(t, c.dev, 1<<17, runtime.AllocOptions{Core: 1})
			view := mustMap(t, src)
			for i := range view {
				view[i] = byte(i*13 + 7)
			}
			before := testutil.DeviceCounter(t, dir, 0, "neuron_core1/stats/other_info/inference_count/total")
			for run := range 3 {
				half := uint64(run%2) << 16
				c.stage([]runtime.Copy{{Src: src.PA + half, Dst: dst.PA + half, Len: 0}})
				if err := c.dev.Doorbell(1, inferenceStart, 1); err != nil {
					t.Fatal(err)
				}
				start := c.expect(runtime.RecordStart)
				end := c.expect(runtime.RecordEnd)
				for e := range start {
					if end[e] < start[e] {
						t.Errorf("run %d engine %d: END before START", run, e)
					}
				}
			}
			// After three runs (six records, four per lap) the tail is at 32.
			if tail, err := c.nqs[0].Tail(); err != nil || tail != 32 {
				t.Errorf("tail after 3 runs: %d %v", tail, err)
			}
			got := make([]byte, 1<<17)
			if err := dst.Read(0, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, view) {
				t.Error("the staged DMA did not copy the buffer")
			}
			if after := testutil.DeviceCounter(t, dir, 0, "neuron_core1/stats/other_info/inference_count/total"); after != before+3 {
				t.Errorf("inference_count %d -> %d after 3 runs", before, after)
			}
			// A queue the host rings itself is not touched by the doorbell.
			hostQ, err := c.dev.InitQueue(16+5, 2, 32, runtime.AllocOptions{Host: true})
			if err != nil {
				t.Fatal(err)
			}
			marker, err := c.dev.NewMarker()
			if err != nil {
				t.Fatal(err)
			}
			defer marker.Close()
			if err := hostQ.Submit([]runtime.Copy{marker.Copy()}); err != nil {
				t.Fatal(err)
			}
			waitMarker(t, marker)
			tx, rx := hostQ.Descriptors([]runtime.Copy{marker.Copy()})
			if err := hostQ.WriteDescriptors(tx, rx); err != nil {
				t.Fatal(err)
			}
			if err := c.dev.Doorbell(1, inferenceStart, 1); err != nil {
				t.Fatal(err)
			}
			c.expect(runtime.RecordStart)
			c.expect(runtime.RecordEnd)
			if marker.Done() {
				t.Error("the doorbell ran a queue the host rings itself")
			}

			// Halt: INIT then HALT, then doorbells do nothing until reset.
			if err := c.dev.Doorbell(1, inferenceStart, 2); err != nil {
				t.Fatal(err)
			}
			c.expect(4)
			c.expect(5)
			tailBefore, _ := c.nqs[0].Tail()
			if err := c.dev.Doorbell(1, inferenceStart, 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if tail, _ := c.nqs[0].Tail(); tail != tailBefore {
				t.Error("a halted core answered a doorbell")
			}
		})
	}
}

// With --exec-latency the doorbell returns at once and END comes later.
func TestExecLatency(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", ExecLatency: 200 * time.Millisecond})
	c := newExecClient(t, dir, 0, 4096)
	start := time.Now()
	if err := c.dev.Doorbell(0, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 150*time.Millisecond {
		t.Errorf("the doorbell ioctl took %v: it waited for the run", el)
	}
	c.expect(runtime.RecordStart)
	c.expect(runtime.RecordEnd)
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("END after %v, before the configured 200 ms", el)
	}
	// The core's time in use counts the run, in microseconds.
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/other_info/nc_time_in_use/total"); got < 200_000 || got > 10_000_000 {
		t.Errorf("nc_time_in_use %d µs after a 200 ms run", got)
	}
}
