package fs_test

import (
	"encoding/binary"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// ringWatcher finds records in a mapped INFER_STATUS ring by position
// and phase, without the head-register write a runtime does per record,
// so only the chip's path is measured.
type ringWatcher struct {
	ring []byte
	size uint64
	n    uint64 // records consumed
}

func newRingWatcher(b *testing.B, dev *runtime.Device, core, slot, size uint32) *ringWatcher {
	b.Helper()
	q, err := dev.InitNQ(core, runtime.NQTypeNotify, slot, size)
	if err != nil {
		b.Fatal(err)
	}
	info := q // keep the mapping for the benchmark's life
	b.Cleanup(func() { info.Close() })
	return &ringWatcher{ring: q.Ring(), size: uint64(size)}
}

// wait spins until record n (counting from 0) is present, returns its code.
func (w *ringWatcher) wait(deadline time.Time) (uint16, bool) {
	off := (w.n * runtime.RecordSize) % w.size
	phase := uint32(1 ^ (w.n*runtime.RecordSize/w.size)&1)
	word := (*uint32)(unsafe.Pointer(&w.ring[off]))
	for atomic.LoadUint32(word)>>31 != phase {
		if time.Now().After(deadline) {
			return 0, false
		}
		goruntime.Gosched() // the daemon shares this process: let it run
	}
	w.n++
	return binary.LittleEndian.Uint16(w.ring[off+6:]), true
}

// execBench brings up one core for doorbells: the SP engine's ring is
// watched (it reports last), the others are enabled but not read.
func execBench(b *testing.B, dev *runtime.Device, core uint32) *ringWatcher {
	b.Helper()
	var sp *ringWatcher
	for e := range uint32(runtime.ComputeEngines) {
		w := newRingWatcher(b, dev, core, runtime.InferStatusSlot+e, 1<<20)
		if e == runtime.ComputeEngines-1 {
			sp = w
		}
	}
	if err := dev.EnableNQs(core, 0x1f<<runtime.InferStatusSlot); err != nil {
		b.Fatal(err)
	}
	return sp
}

// BenchmarkExecDoorbell: SEMAPHORE_INCREMENT until SP's END record is
// visible in the mapped ring, for a run that first moves size bytes on the
// exec queue, interleaved with a bare go-fuse no-op ioctl (the floor). 4
// KiB is moved by the ringer itself; 1 MiB is more than the engines move
// inline, so the run finishes in the background (a program staged through
// the exec queue, as a sequencer's would be).
func BenchmarkExecDoorbell(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes uint64
	}{{"4KiB", 4096}, {"1MiB", 1 << 20}} {
		b.Run("op=doorbell-END-"+size.name, func(b *testing.B) { benchExecDoorbell(b, size.bytes) })
	}
}

func benchExecDoorbell(b *testing.B, size uint64) {
	noop, dev, sp := execBenchHost(b)
	src, _ := dev.Alloc(size, runtime.AllocOptions{Host: true})
	dst, _ := dev.Alloc(size, runtime.AllocOptions{})
	q, err := dev.InitQueue(3, 6, 8192, runtime.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var copies []runtime.Copy // 64 KiB is a descriptor's most
	for off := uint64(0); off < size; off += 64 << 10 {
		copies = append(copies, runtime.Copy{Src: src.PA + off, Dst: dst.PA + off, Len: uint32(min(size-off, 64<<10))})
	}
	// Staging the copy is not timed: only the doorbell until END.
	interleave(b.N, noop, func() time.Duration {
		if err := q.WriteDescriptors(q.Descriptors(copies)); err != nil {
			b.Fatal(err)
		}
		return ringUntilEnd(b, dev, sp)
	}).report(b)
}

// execBenchHost is the exec benchmarks' host: the floor's no-op ioctl,
// device 0 of a trn2.48xlarge (closed at the end) and core 0's SP ring.
func execBenchHost(b *testing.B) (noop func(), dev *runtime.Device, sp *ringWatcher) {
	noop = noopIoctl(b)
	dir, _ := testutil.Mount(b, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	return noop, dev, execBench(b, dev, 0)
}

// ringUntilEnd rings core 0's doorbell and times it until SP's START and
// END show.
func ringUntilEnd(b *testing.B, dev *runtime.Device, sp *ringWatcher) time.Duration {
	t0 := time.Now()
	if err := dev.Doorbell(0, 0, 1); err != nil {
		b.Fatal(err)
	}
	deadline := t0.Add(10 * time.Second)
	if code, ok := sp.wait(deadline); !ok || code != runtime.RecordStart {
		b.Fatalf("START: %d %v", code, ok)
	}
	if code, ok := sp.wait(deadline); !ok || code != runtime.RecordEnd {
		b.Fatalf("END: %d %v", code, ok)
	}
	return time.Since(t0)
}

// BenchmarkExecConcurrent: every core of 16 devices rings its doorbell in
// a loop at once; each run must produce exactly one START and one END.
func BenchmarkExecConcurrent(b *testing.B) {
	dir, sys := testutil.Mount(b, "trn2.48xlarge")
	type core struct {
		dev *runtime.Device
		nc  uint32
		sp  *ringWatcher
	}
	var cores []core
	for i := range sys.Devices {
		dev, err := runtime.Host{Root: dir}.Open(i)
		if err != nil {
			b.Fatal(err)
		}
		defer dev.Close()
		for nc := range uint32(sys.Arch.CoresPerDevice) {
			cores = append(cores, core{dev, nc, execBench(b, dev, nc)})
		}
	}
	per := max(b.N/len(cores), 1)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var lost atomic.Int64
	for _, c := range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if err := c.dev.Doorbell(c.nc, 0, 1); err != nil {
					lost.Add(1)
					return
				}
				deadline := time.Now().Add(10 * time.Second)
				s, ok1 := c.sp.wait(deadline)
				e, ok2 := c.sp.wait(deadline)
				if !ok1 || !ok2 || s != runtime.RecordStart || e != runtime.RecordEnd {
					lost.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if lost.Load() != 0 {
		b.Fatalf("%d cores lost or misordered records", lost.Load())
	}
	// No duplicates: every ring holds exactly two records per run.
	for _, c := range cores {
		off := (c.sp.n * runtime.RecordSize) % c.sp.size
		if w := binary.LittleEndian.Uint32(c.sp.ring[off:]); w != 0 && c.sp.n*runtime.RecordSize < c.sp.size {
			b.Fatalf("device %d core %d: a record beyond the %d expected", c.dev.Index, c.nc, c.sp.n)
		}
	}
	b.ReportMetric(float64(per*len(cores))/elapsed.Seconds(), "doorbells/s")
}
