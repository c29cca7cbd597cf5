package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// basicinfobench times $NEURONFS_BENCH_N DEVICE_BASIC_INFOs one by
	// one and prints the median and the 99th percentile in ns.
	clients["basicinfobench"] = func() int {
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_BENCH_N"))
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		var bi ioctl.DeviceBasicInfo
		call := func() bool {
			r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi)
			return r == 0 && e == 0
		}
		for range 1000 { // warm up: threads, caches
			if !call() {
				return clientFail("DEVICE_BASIC_INFO failed")
			}
		}
		times := make([]time.Duration, max(n, 1))
		for i := range times {
			start := time.Now()
			if !call() {
				return clientFail("DEVICE_BASIC_INFO failed")
			}
			times[i] = time.Since(start)
		}
		slices.Sort(times)
		fmt.Printf("%d %d\n", times[len(times)/2].Nanoseconds(), times[len(times)*99/100].Nanoseconds())
		return 0
	}
	// mapcopybench copies 64 MiB into a mapped 64 MiB device chunk and
	// into anonymous shared memory, each $NEURONFS_BENCH_N times after a
	// first touch, and prints the median ns of one copy to each.
	clients["mapcopybench"] = func() int {
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_BENCH_N"))
		const size = 64 << 20
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			return clientFail("%v", err)
		}
		m, err := d.Alloc(size, runtime.AllocOptions{})
		if err != nil {
			return clientFail("%v", err)
		}
		dev, err := m.Map()
		if err != nil {
			return clientFail("%v", err)
		}
		anon, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		if err != nil {
			return clientFail("%v", err)
		}
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i)
		}
		median := func(dst []byte) int64 {
			copy(dst, src) // first touch: page faults are not the copy
			times := make([]time.Duration, max(n, 1))
			for i := range times {
				start := time.Now()
				copy(dst, src)
				times[i] = time.Since(start)
			}
			slices.Sort(times)
			return times[len(times)/2].Nanoseconds()
		}
		fmt.Printf("%d %d\n", median(dev[:size]), median(anon))
		return 0
	}
}

// BenchmarkRunMappedCopy measures a 64 MiB memcpy into a mapped device
// chunk under run, against anonymous shared memory in the same client
// (ns/copy and anon-ns/copy, medians of 20 copies), for each way a
// device descriptor is served.
func BenchmarkRunMappedCopy(b *testing.B) {
	for _, impl := range []string{deviceFDsSupervisor, deviceFDsFUSE} {
		b.Run("impl="+impl, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "run", "--instance=trn1.2xlarge", "--device-fds="+impl, "--", os.Args[0], "__client", "mapcopybench")
				cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_LOCKCHECK=0", "NEURONFS_BENCH_N=20")
				cmd.Stderr = os.Stderr
				var err error
				if out, err = cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
			var dev, anon float64
			fmt.Sscan(strings.TrimSpace(string(out)), &dev, &anon)
			b.ReportMetric(dev, "ns/copy")
			b.ReportMetric(anon, "anon-ns/copy")
			b.ReportMetric(anon/dev, "speed-vs-anon")
		})
	}
}

// BenchmarkRunDeviceFDs measures one ioctl (DEVICE_BASIC_INFO) of a
// client under run, through each way a device descriptor is served: the
// seccomp supervisor's direct descriptors, and the FUSE file over
// io_uring and over classic /dev/fuse reads, in the same run
// (`benchstat -col /impl`; ns/ioctl is the median of 20,000 calls timed
// one by one, p99-ns/ioctl their 99th percentile).
func BenchmarkRunDeviceFDs(b *testing.B) {
	for _, impl := range []struct {
		name  string
		flags []string
	}{
		{"supervisor", []string{"--device-fds=supervisor"}},
		{"fuse-uring", []string{"--device-fds=fuse", "--fuse-transport=uring"}},
		{"fuse-classic", []string{"--device-fds=fuse", "--fuse-transport=classic"}},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				args := append(append([]string{"run", "--instance=trn1.2xlarge"}, impl.flags...), "--", os.Args[0], "__client", "basicinfobench")
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_LOCKCHECK=0", "NEURONFS_BENCH_N=20000")
				cmd.Stderr = os.Stderr
				var err error
				if out, err = cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
			var median, p99 float64
			fmt.Sscan(strings.TrimSpace(string(out)), &median, &p99)
			b.ReportMetric(median, "ns/ioctl")
			b.ReportMetric(p99, "p99-ns/ioctl")
		})
	}
}
