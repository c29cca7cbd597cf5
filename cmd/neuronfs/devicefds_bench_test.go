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
