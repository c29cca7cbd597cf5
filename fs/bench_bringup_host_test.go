package fs_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// BenchmarkBringupWholeHost replays the register-level bring-up of every
// device of a trn2.48xlarge once: each NeuronCore's NX images and its
// eight Q7 cores' whole apertures through BAR_WRITE (about 0.8 M words
// per NeuronCore, 100 M for the host), every ready word read and claimed,
// and each engine's notification queues set up. It reports the wall time
// and what the daemon (here the test process) holds after it: its RSS,
// of which its own heap (anon), and the device memory the install made
// resident.
func BenchmarkBringupWholeHost(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir, sys := testutil.Mount(b, "trn2.48xlarge")
		f, g := sys.Arch, sys.Arch.Q7Pool()
		var fds []int
		for dev := range sys.Devices {
			fd, err := unix.Open(dir+"/dev/neuron"+strconv.Itoa(dev), unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			fds = append(fds, fd)
		}
		start := time.Now()
		b.StartTimer()
		for dev, fd := range fds {
			bb := newBulkBAR(b, fd, int(g.DRAM/4))
			for nc := range f.CoresPerDevice {
				installUcode(bb, f, nc, 0)
			}
			for nc := range f.CoresPerDevice {
				claimUcode(b, bb, f, dev, nc)
				initEngineQueues(b, fd, nc)
			}
		}
		b.StopTimer()
		wall := time.Since(start)
		var resident uint64
		for _, d := range sys.Devices {
			r, err := d.Chip().PhysicalResident()
			if err != nil {
				b.Fatal(err)
			}
			resident += r
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(procStatusKiB(b, "VmRSS"))/1024, "rss-MiB")
		b.ReportMetric(float64(procStatusKiB(b, "RssAnon"))/1024, "anon-MiB")
		b.ReportMetric(float64(resident)/(1<<20), "resident-MiB")
		for _, fd := range fds {
			unix.Close(fd)
		}
		b.StartTimer()
	}
}

// initEngineQueues sets up the event and error queues of each of core
// nc's five engines in device memory, as the runtime does after boot.
func initEngineQueues(b *testing.B, fd, nc int) {
	b.Helper()
	for engine := range uint32(nxEngines) {
		for _, typ := range []uint32{0, 1} {
			v := ioctl.NotificationsInitV2{NQDevID: uint32(nc), NQType: typ, EngineIndex: engine, Size: 1 << 14}
			if r, e := testutil.Ioctl(fd, ioctl.CmdNotificationsInitV2, &v); r != 0 || e != 0 {
				b.Fatalf("core %d engine %d queue type %d: NOTIFICATIONS_INIT_V2: %d %v", nc, engine, typ, r, e)
			}
		}
	}
}

// procStatusKiB reads one "kB" field of /proc/self/status.
func procStatusKiB(b *testing.B, field string) uint64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
