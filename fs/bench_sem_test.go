package fs_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

func processCPU() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func init() {
	// "semstore" maps core 0's SEMAPHORE resource of device 0 and stores
	// 3 into semaphore 200's INCR window NEURONFS_SEM_N times. With
	// NEURONFS_SEM_GAP unset it waits for each store to show in the READ
	// view (spinning: this process has no other work) and prints the
	// median and 90th percentile latency in ns; with a gap it sleeps that
	// long between stores.
	helpers["semstore"] = func() int {
		fd, err := unix.Open(os.Getenv("NEURONFS_ROOT")+"/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		off, _ := strconv.ParseUint(os.Getenv("NEURONFS_SEM_OFF"), 0, 64)
		m, err := unix.Mmap(fd, int64(off), dhal.TPBSemaphoreArea, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		inc := (*uint32)(unsafe.Pointer(&m[0x1800+4*200]))
		read := (*uint32)(unsafe.Pointer(&m[0x1000+4*200]))
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_SEM_N"))
		gap, _ := time.ParseDuration(os.Getenv("NEURONFS_SEM_GAP"))
		var lat []time.Duration
		if os.Getenv("NEURONFS_SEM_DOORBELL") != "" {
			// Store 1 into semaphore 0's INCR window (the doorbell) and
			// time it until core 0's SP engine reports START.
			sp, err := spRing(os.Getenv("NEURONFS_ROOT"))
			if err != nil {
				fmt.Println("err", err)
				return 1
			}
			bell := (*uint32)(unsafe.Pointer(&m[0x1800]))
			for range n {
				t0 := time.Now()
				atomic.StoreUint32(bell, 1)
				if code, ok := sp.wait(t0.Add(10 * time.Second)); !ok || code != runtime.RecordStart {
					fmt.Println("err: START", code, ok)
					return 1
				}
				lat = append(lat, time.Since(t0))
				if code, ok := sp.wait(t0.Add(10 * time.Second)); !ok || code != runtime.RecordEnd {
					fmt.Println("err: END", code, ok)
					return 1
				}
			}
			n = 0
		}
		for range n {
			if gap > 0 {
				atomic.StoreUint32(inc, 3)
				time.Sleep(gap)
				continue
			}
			want := atomic.LoadUint32(read) + 3
			t0 := time.Now()
			atomic.StoreUint32(inc, 3)
			for atomic.LoadUint32(read) != want {
				if time.Since(t0) > 10*time.Second {
					fmt.Println("err: store never applied")
					return 1
				}
			}
			lat = append(lat, time.Since(t0))
		}
		if len(lat) > 0 {
			slices.Sort(lat)
			fmt.Println(lat[len(lat)/2].Nanoseconds(), lat[len(lat)*9/10].Nanoseconds())
		}
		return 0
	}
}

// spRing brings up core 0 of device 0 for doorbells as a runtime does
// (its five INFER_STATUS rings, enabled) and watches the SP engine's.
func spRing(root string) (*ringWatcher, error) {
	dev, err := runtime.Host{Root: root}.Open(0)
	if err != nil {
		return nil, err
	}
	var sp *ringWatcher
	const size = 1 << 16
	for e := range uint32(runtime.ComputeEngines) {
		q, err := dev.InitNQ(0, runtime.NQTypeNotify, runtime.InferStatusSlot+e, size)
		if err != nil {
			return nil, err
		}
		sp = &ringWatcher{ring: q.Ring(), size: size}
	}
	return sp, dev.EnableNQs(0, 0x1f<<runtime.InferStatusSlot)
}

// A client process's store into a mapped INCR window until the daemon
// has applied it (the READ view changes), one at a time as a proxy's
// nec_inc_semaphore does: median and p90 over b.N stores; the same for a
// store of 1 into the doorbell semaphore until the SP engine's START
// record is in its mapped ring (the device side acting). Then the
// daemon's CPU (this process holds only the daemon) for one second each:
// the mapping idle, and a client storing every 1 ms and every 10 ms.
func BenchmarkMappedSemaphoreStore(b *testing.B) {
	dir, sys := testutil.Mount(b, "trn2.48xlarge")
	res, _ := sys.Arch.LookupMmapResource(dhal.BlockTPB, 0, dhal.ResourceSemaphore)
	helper := func(n int, gap time.Duration, env ...string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "NEURONFS_TEST_HELPER=semstore", "NEURONFS_ROOT="+dir,
			fmt.Sprintf("NEURONFS_SEM_OFF=%#x", res.Offset), "NEURONFS_SEM_N="+strconv.Itoa(n))
		cmd.Env = append(cmd.Env, env...)
		if gap > 0 {
			cmd.Env = append(cmd.Env, "NEURONFS_SEM_GAP="+gap.String())
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("helper: %v: %s", err, out)
		}
		return string(out)
	}
	// The device stays open meanwhile, as a runtime keeps it.
	fd, err := unix.Open(dir+"/dev/neuron0", unix.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	b.ResetTimer()
	out := helper(b.N, 0)
	b.StopTimer()
	var median, p90 int64
	if _, err := fmt.Sscan(strings.TrimSpace(out), &median, &p90); err != nil {
		b.Fatalf("helper said %q", out)
	}
	b.ReportMetric(float64(median)/1e3, "median-µs")
	b.ReportMetric(float64(p90)/1e3, "p90-µs")
	out = helper(b.N, 0, "NEURONFS_SEM_DOORBELL=1")
	if _, err := fmt.Sscan(strings.TrimSpace(out), &median, &p90); err != nil {
		b.Fatalf("doorbell helper said %q", out)
	}
	b.ReportMetric(float64(median)/1e3, "doorbell-median-µs")
	b.ReportMetric(float64(p90)/1e3, "doorbell-p90-µs")
	share := func(run func()) float64 {
		c0, t0 := processCPU(), time.Now()
		run()
		return 100 * float64(processCPU()-c0) / float64(time.Since(t0))
	}
	time.Sleep(time.Second) // past the fast polls' tail
	b.ReportMetric(share(func() { time.Sleep(time.Second) }), "idle-cpu%")
	b.ReportMetric(share(func() { helper(1000, time.Millisecond) }), "store/1ms-cpu%")
	b.ReportMetric(share(func() { helper(100, 10*time.Millisecond) }), "store/10ms-cpu%")
}
