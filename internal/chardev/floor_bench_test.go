package chardev

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkNotificationFloor measures what no supervisor can go below: an
// open notified to a C supervisor that answers CONTINUE at once (it reads
// no path and decides nothing), against the same open un-notified, in
// alternating child processes of one run (testdata/notify_floor.c). The
// issue-18 target for a non-device open under `run` (≤ 3× native) is to be
// read against floor-x-native: a notified open cannot cost less than that.
// Run with -benchtime 1x; NEURONFS_BENCH_N sets the opens per child
// (default 50000).
func BenchmarkNotificationFloor(b *testing.B) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		b.Skip("gcc is needed to build the floor's supervisor")
	}
	bin := filepath.Join(b.TempDir(), "notify_floor")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, "testdata/notify_floor.c").CombinedOutput(); err != nil {
		b.Fatalf("building testdata/notify_floor.c: %v\n%s", err, out)
	}
	n := "50000"
	if s := os.Getenv("NEURONFS_BENCH_N"); s != "" {
		n = s
	}
	var m map[string]float64
	for b.Loop() {
		// The path: an ordinary file, as BenchmarkFilteredSyscalls opens.
		out, err := exec.Command(bin, n, "5", os.Args[0]).Output()
		if err != nil {
			b.Fatalf("notify_floor: %v", err)
		}
		m = map[string]float64{}
		for _, kv := range strings.Fields(string(out)) {
			k, v, _ := strings.Cut(kv, "=")
			m[k], _ = strconv.ParseFloat(v, 64)
		}
	}
	if m["native_ns"] <= 0 || m["sync_ns"] <= 0 || m["async_ns"] <= 0 {
		b.Fatalf("notify_floor printed %v", m)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(m["native_ns"], "native-ns/open")
	b.ReportMetric(m["sync_ns"], "floor-ns/open")
	b.ReportMetric(m["async_ns"], "floor-async-ns/open")
	b.ReportMetric(m["sync_ns"]/m["native_ns"], "floor-x-native")
}
