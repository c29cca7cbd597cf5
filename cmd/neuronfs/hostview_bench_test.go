package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// viewAttr is the attribute viewbench reads: world-readable, no link on
// the way, rendered at each open by both views.
const viewAttr = "/sys/devices/virtual/neuron_device/neuron0/dev"

func init() {
	// viewbench prints the mean ns of a non-device open+close, of an
	// attribute's open+read+close, and of DEVICE_BASIC_INFO.
	clients["viewbench"] = func() int {
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_BENCH_N"))
		n = max(n, 1)
		open, err := timeEach(n, func() error {
			fd, err := unix.Open(os.Args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
		if err != nil {
			return clientFail("open: %v", err)
		}
		buf := make([]byte, 64)
		attr, err := timeEach(n, func() error {
			fd, err := unix.Open(viewAttr, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if k, err := unix.Read(fd, buf); err != nil || k == 0 {
				return fmt.Errorf("read %d bytes: %v", k, err)
			}
			return nil
		})
		if err != nil {
			return clientFail("%s: %v", viewAttr, err)
		}
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		var bi ioctl.DeviceBasicInfo
		info, err := timeEach(n, func() error {
			if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 {
				return fmt.Errorf("DEVICE_BASIC_INFO: %d %v", r, e)
			}
			return nil
		})
		if err != nil {
			return clientFail("%v", err)
		}
		fmt.Printf("%f %f %f\n", open, attr, info)
		return 0
	}
}

// timeEach runs f n times and returns the mean ns of one.
func timeEach(n int, f func() error) (float64, error) {
	start := time.Now()
	for range n {
		if err := f(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n), nil
}

// BenchmarkHostView measures, in the same run, the filter host view
// against the mount with supervisor descriptors (what run gives without
// passthrough): a non-device open (ns/open), an attribute's
// open+read+close (ns/attr, FUSE sysfs against the shadow's memfd) and
// DEVICE_BASIC_INFO (ns/basicinfo). `benchstat -col /impl`.
func BenchmarkHostView(b *testing.B) {
	for _, impl := range []struct{ name, flag string }{{"mount", "--host-view=mount"}, {"filter", "--host-view=filter"}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "run", "--instance=trn1.2xlarge", impl.flag, "--device-fds=supervisor", "--", os.Args[0], "__client", "viewbench")
				cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_LOCKCHECK=0", "NEURONFS_BENCH_N=5000")
				cmd.Stderr = os.Stderr
				var err error
				if out, err = cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
			var open, attr, info float64
			fmt.Sscan(strings.TrimSpace(string(out)), &open, &attr, &info)
			b.ReportMetric(open, "ns/open")
			b.ReportMetric(attr, "ns/attr")
			b.ReportMetric(info, "ns/basicinfo")
		})
	}
}
