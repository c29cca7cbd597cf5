package fs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// BenchmarkTransports compares the FUSE transports from a separate C
// client process (testdata/transport_client.c), unpinned: DEVICE_BASIC_INFO
// and a 4 KiB MEM_BUF_COPY64 on the classic loop and on io_uring, next to
// the bare go-fuse no-op ioctl (the floor), with one client thread and
// with two on two devices. Latencies come from one client run that
// interleaves rounds of 256 calls per target, so every transport sees the
// same machine; CPU per call and calls/s come from one run per target
// after it (the server's CPU is this process's, while only that target is
// called). Report: median, p99 and p99.9 in µs per impl; run with
// -benchtime 1x (each run is NEURONFS_BENCH_CALLS calls per thread and
// target, default 20000).
func BenchmarkTransports(b *testing.B) {
	testutil.RequireFUSE(b)
	if !uringUsable() {
		b.Skip("no FUSE over io_uring here")
	}
	calls := 20000
	if s := os.Getenv("NEURONFS_BENCH_CALLS"); s != "" {
		calls, _ = strconv.Atoi(s)
	}
	client := filepath.Join(b.TempDir(), "transport_client")
	if out, err := exec.Command("gcc", "-O2", "-pthread", "-o", client, "testdata/transport_client.c").CombinedOutput(); err != nil {
		b.Fatalf("building the C client: %v\n%s", err, out)
	}
	floor := bareGoFuseMount(b)
	type impl struct {
		name, root string
		handles    []uint64
	}
	impls := []*impl{{name: "gofuse-floor", root: floor}}
	for _, tr := range []string{fs.TransportClassic, fs.TransportURing} {
		sys, err := device.NewSystem(device.Config{Instance: "trn2.48xlarge", Major: 244})
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		f, err := fs.Mount(sys, dir, fs.Options{Transport: tr})
		if err != nil {
			b.Fatal(err)
		}
		if f.Transport() != tr {
			b.Fatalf("asked for %s, got %s", tr, f.Transport())
		}
		im := &impl{name: tr, root: dir + "/dev/neuron"}
		for i := range 2 {
			d, err := runtime.Host{Root: dir}.Open(i)
			if err != nil {
				b.Fatal(err)
			}
			m, err := d.Alloc(4096, runtime.AllocOptions{Channel: 1})
			if err != nil {
				b.Fatal(err)
			}
			im.handles = append(im.handles, m.Handle)
			b.Cleanup(func() { d.Close() })
		}
		b.Cleanup(func() { f.Unmount(); f.Abort(); sys.Close() })
		impls = append(impls, im)
	}
	target := func(im *impl) string {
		s := im.root
		for _, h := range im.handles {
			s += fmt.Sprintf(",%#x", h)
		}
		return s
	}
	for _, op := range []string{"basic", "copy4k"} {
		for _, threads := range []int{1, 2} {
			args := []string{"interleave", op, strconv.Itoa(calls), strconv.Itoa(threads)}
			for _, im := range impls {
				args = append(args, target(im))
			}
			out, err := exec.Command(client, args...).Output()
			if err != nil {
				b.Fatalf("client %v: %v", args, err)
			}
			lat := parseClient(b, out)
			for i, im := range impls {
				seq := []string{"seq", op, strconv.Itoa(calls), strconv.Itoa(threads), target(im)}
				var before, after unix.Rusage
				unix.Getrusage(unix.RUSAGE_SELF, &before)
				sout, err := exec.Command(client, seq...).Output()
				if err != nil {
					b.Fatalf("client %v: %v", seq, err)
				}
				unix.Getrusage(unix.RUSAGE_SELF, &after)
				s := parseClient(b, sout)["seq"]
				server := float64(cpuMicros(after)-cpuMicros(before)) / float64(calls*threads)
				name := fmt.Sprintf("op=%s/threads=%d/impl=%s", map[string]string{"basic": "DEVICE_BASIC_INFO", "copy4k": "MEM_BUF_COPY64-4KiB"}[op], threads, im.name)
				l := lat[fmt.Sprintf("target=%d", i)]
				b.Run(name, func(b *testing.B) {
					b.ReportMetric(0, "ns/op")
					b.ReportMetric(l["median_us"], "median-µs")
					b.ReportMetric(l["p99_us"], "p99-µs")
					b.ReportMetric(l["p999_us"], "p99.9-µs")
					b.ReportMetric(s["calls_per_s"], "calls/s")
					b.ReportMetric(s["client_cpu_us"], "client-cpu-µs/call")
					b.ReportMetric(server, "server-cpu-µs/call")
				})
			}
		}
	}
}

func cpuMicros(r unix.Rusage) int64 {
	return r.Utime.Sec*1e6 + r.Utime.Usec + r.Stime.Sec*1e6 + r.Stime.Usec
}

// parseClient reads the client's "key k=v k=v" lines.
func parseClient(b *testing.B, out []byte) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		m := map[string]float64{}
		for _, kv := range fields[1:] {
			k, v, _ := strings.Cut(kv, "=")
			m[k], _ = strconv.ParseFloat(v, 64)
		}
		res[fields[0]] = m
	}
	if len(res) == 0 {
		b.Fatalf("client said %q", out)
	}
	return res
}

// uringUsable tells whether this kernel can serve FUSE over io_uring.
func uringUsable() bool {
	b, err := os.ReadFile("/sys/module/fuse/parameters/enable_uring")
	if err != nil {
		return false
	}
	if strings.TrimSpace(string(b)) == "Y" {
		return true
	}
	f, err := os.OpenFile("/sys/module/fuse/parameters/enable_uring", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
