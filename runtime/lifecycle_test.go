package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// coreSession is one core brought up the way a runtime does it.
type coreSession struct {
	nqs []*runtime.NQ
}

// bringUp opens every device, reserves all cores through the misc fd,
// resets them, and gives each core its five INFER_STATUS rings, enabled.
func bringUp(h runtime.Host, cores int) ([]*runtime.Device, *runtime.Misc, [][]coreSession, error) {
	idx, err := h.DeviceIndices()
	if err != nil {
		return nil, nil, nil, err
	}
	misc, err := h.OpenMisc(idx[0])
	if err != nil {
		return nil, nil, nil, err
	}
	devs := make([]*runtime.Device, len(idx))
	sessions := make([][]coreSession, len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for i, n := range idx {
		d, err := h.Open(n)
		if err != nil {
			return nil, nil, nil, err
		}
		devs[i] = d
		if _, err := misc.MarkCores(uint32(cores), uint32(i*cores), uint32(i*cores+cores-1)); err != nil {
			return nil, nil, nil, fmt.Errorf("reserve device %d: %w", n, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = d.Reset(1<<cores - 1); errs[i] != nil {
				return
			}
			for c := range uint32(cores) {
				var s coreSession
				for e := range uint32(runtime.ComputeEngines) {
					q, err := d.InitNQ(c, runtime.NQTypeNotify, runtime.InferStatusSlot+e, 4096)
					if err != nil {
						errs[i] = err
						return
					}
					s.nqs = append(s.nqs, q)
				}
				if errs[i] = d.EnableNQs(c, 0x1f<<runtime.InferStatusSlot); errs[i] != nil {
					return
				}
				sessions[i] = append(sessions[i], s)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return devs, misc, sessions, nil
}

// tearDown closes what bringUp opened, queues first.
func tearDown(devs []*runtime.Device, misc *runtime.Misc, sessions [][]coreSession) {
	for _, s := range sessions {
		for _, c := range s {
			for _, nq := range c.nqs {
				nq.Close()
			}
		}
	}
	for _, d := range devs {
		d.Close()
	}
	misc.Close()
}

// The whole life of a runtime on Trn1, Inf2, Trn2 and Trn3: bring-up of every device,
// tensor round trips from 1 byte to 64 MiB, a DMA ring, an execution
// harvested from the rings, and a close after which the memory counters
// are back at their baseline.
func TestRuntimeLifecycle(t *testing.T) {
	for _, tc := range []struct {
		inst  string
		cores int
	}{{"trn1.32xlarge", 2}, {"inf2.48xlarge", 2}, {"trn2.48xlarge", 8}, {"trn3.48xlarge", 8}} {
		t.Run(tc.inst, func(t *testing.T) {
			dir, _ := testutil.Mount(t, tc.inst)
			h := runtime.Host{Root: dir}
			devs, misc, sessions, err := bringUp(h, tc.cores)
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			closeAll := func() {
				if closed {
					return
				}
				closed = true
				tearDown(devs, misc, sessions)
			}
			t.Cleanup(closeAll) // before the unmount, also when the test fails
			d := devs[len(devs)-1]
			for _, size := range []int{1, 4095, 4096, 1 << 20, 64 << 20} {
				for _, host := range []bool{false, true} {
					m, err := d.Alloc(uint64(size), runtime.AllocOptions{Host: host, Core: 1})
					if err != nil {
						t.Fatal(err)
					}
					want := pattern(size, int64(size))
					got := make([]byte, size)
					if err := m.Write(0, want); err != nil {
						t.Fatal(err)
					}
					if err := m.Read(0, got); err != nil || !bytes.Equal(got, want) {
						t.Fatalf("%d bytes (host %v): round trip (%v)", size, host, err)
					}
					if err := m.Free(); err != nil {
						t.Fatal(err)
					}
				}
			}

			// A DMA ring from HBM to host memory.
			src, _ := d.Alloc(1<<18, runtime.AllocOptions{Core: 1})
			dst, _ := d.Alloc(1<<18, runtime.AllocOptions{Host: true})
			src.Write(0, pattern(1<<18, 9))
			marker, err := d.NewMarker()
			if err != nil {
				t.Fatal(err)
			}
			q, err := d.InitQueue(16+7, 3, 64, runtime.AllocOptions{Host: true})
			if err != nil {
				t.Fatal(err)
			}
			var copies []runtime.Copy
			for off := uint64(0); off < 1<<18; off += 1 << 16 {
				copies = append(copies, runtime.Copy{Src: src.PA + off, Dst: dst.PA + off, Len: 0})
			}
			if err := q.Submit(append(copies, marker.Copy())); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := marker.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 1<<18)
			dst.Read(0, got)
			if !bytes.Equal(got, pattern(1<<18, 9)) {
				t.Fatal("the DMA ring did not copy")
			}

			// An execution on core 1, harvested from all five rings.
			if err := d.Doorbell(1, 0, 1); err != nil {
				t.Fatal(err)
			}
			for _, code := range []uint16{runtime.RecordStart, runtime.RecordEnd} {
				for e, nq := range sessions[len(devs)-1][1].nqs {
					rec, err := nq.Next(ctx)
					if err != nil || runtime.RecordCode(rec) != code {
						t.Fatalf("engine %d: record %x (%v), want code %d", e, rec, err, code)
					}
				}
			}
			if got := testutil.DeviceCounter(t, dir, len(devs)-1, "neuron_core1/stats/other_info/inference_count/total"); got != 1 {
				t.Errorf("inference_count %d after one execution", got)
			}

			// Close: everything but the device-lifespan rings goes.
			marker.Close()
			closeAll()
			for i := range devs {
				for c := range tc.cores {
					base := fmt.Sprintf("neuron_core%d/stats/memory_usage/", c)
					if got := testutil.DeviceCounter(t, dir, i, base+"device_mem/total"); got != 0 {
						t.Errorf("device %d core %d: device memory %d after close", i, c, got)
					}
					host := testutil.DeviceCounter(t, dir, i, base+"host_mem/total")
					rings := uint64(runtime.ComputeEngines * 4096)
					if host != rings {
						t.Errorf("device %d core %d: host memory %d after close, want the %d of its notification rings", i, c, host, rings)
					}
				}
			}
		})
	}
}

// BenchmarkBringUp16: open, reserve, reset and NQ init per core of 16
// Trn2 devices (128 cores) at the default time scale.
func BenchmarkBringUp16(b *testing.B) {
	dir, _ := testutil.Mount(b, "trn2.48xlarge")
	h := runtime.Host{Root: dir}
	for b.Loop() {
		devs, misc, sessions, err := bringUp(h, 8)
		if err != nil {
			b.Fatal(err)
		}
		tearDown(devs, misc, sessions)
	}
}

// BenchmarkTensor64MiB: a 64 MiB tensor written and read back through the
// runtime, against process_vm_readv of the same size twice (the floor).
func BenchmarkTensor64MiB(b *testing.B) {
	const size = 64 << 20
	buf := pattern(size, 1)
	b.Run("impl=process_vm_readv", func(b *testing.B) {
		dst := make([]byte, size)
		b.SetBytes(2 * size)
		for b.Loop() {
			for range 2 {
				if err := testutil.ReadvSelf(dst, buf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("impl=runtime-write+read", func(b *testing.B) {
		dir, _ := testutil.Mount(b, "trn2.48xlarge")
		d, err := runtime.Host{Root: dir}.Open(0)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		m, err := d.Alloc(size, runtime.AllocOptions{})
		if err != nil {
			b.Fatal(err)
		}
		got := make([]byte, size)
		m.Write(0, buf) // fault the device pages in
		b.SetBytes(2 * size)
		for b.Loop() {
			if err := m.Write(0, buf); err != nil {
				b.Fatal(err)
			}
			if err := m.Read(0, got); err != nil {
				b.Fatal(err)
			}
		}
	})
}
