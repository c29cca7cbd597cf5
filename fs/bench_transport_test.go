package fs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/fuseuring"
	"github.com/neuronfs/neuronfs/runtime"
)

// BenchmarkTransports compares the FUSE transports from a separate C
// client process (testdata/transport_client.c), unpinned: DEVICE_BASIC_INFO
// and a 4 KiB MEM_BUF_COPY64 on `neuronfs mount` daemons serving over the
// classic loop and over io_uring, next to the floors: a bare go-fuse file
// whose ioctl does nothing, served by go-fuse's loop (gofuse-floor) and over
// io_uring (gofuse-uring-floor). One client thread, and two on two devices.
// Latencies come from one client run that interleaves rounds of 256 calls
// per target, so every impl sees the same minutes; calls/s and CPU per call
// (client's, and the serving process's from /proc/PID/stat) come from one
// run per target after it. Run with -benchtime 1x; each run is
// NEURONFS_BENCH_CALLS calls per thread and target (default 20000).
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
		pid        int // the serving daemon; 0: this process
	}
	impls := []*impl{{name: "gofuse-floor", root: floor}, {name: "gofuse-uring-floor", root: bareGoFuseURingMount(b)}}
	// The neuronfs servers are daemons (a built neuronfs mount), as in
	// production: test binaries check the lock order on every
	// acquisition, which would weigh on the handlers, and a process of
	// its own gives each server's CPU time exactly.
	bin := filepath.Join(b.TempDir(), "neuronfs")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/neuronfs").CombinedOutput(); err != nil {
		b.Fatalf("building neuronfs: %v\n%s", err, out)
	}
	for _, tr := range []string{fs.TransportClassic, fs.TransportURing} {
		dir, pid := startMountDaemon(b, bin, tr)
		im := &impl{name: tr, root: dir + "/dev/neuron", pid: pid}
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
		impls = append(impls, im)
	}
	target := func(im *impl) string {
		s := im.root
		for _, h := range im.handles {
			s += fmt.Sprintf(",%#x", h)
		}
		return s
	}
	type result struct{ lat, seq map[string]float64 }
	for _, op := range []string{"basic", "copy4k"} {
		for _, threads := range []int{1, 2} {
			// -count repeats each leaf in turn: the first impl's k-th run
			// measures every impl (interleaved), the others' k-th runs
			// report that measurement.
			var runs [][]result
			measure := func(b *testing.B) []result {
				args := []string{"interleave", op, strconv.Itoa(calls), strconv.Itoa(threads)}
				for _, im := range impls {
					args = append(args, target(im))
				}
				out, err := exec.Command(client, args...).Output()
				if err != nil {
					b.Fatalf("client %v: %v", args, err)
				}
				lat := parseClient(b, out)
				var res []result
				for i, im := range impls {
					seq := []string{"seq", op, strconv.Itoa(calls), strconv.Itoa(threads), target(im)}
					before := serverCPU(b, im.pid)
					sout, err := exec.Command(client, seq...).Output()
					if err != nil {
						b.Fatalf("client %v: %v", seq, err)
					}
					after := serverCPU(b, im.pid)
					s := parseClient(b, sout)["seq"]
					s["server_cpu_us"] = float64(after-before) / float64(calls*threads)
					res = append(res, result{lat: lat[fmt.Sprintf("target=%d", i)], seq: s})
				}
				return res
			}
			for i, im := range impls {
				seen := 0
				name := fmt.Sprintf("op=%s/threads=%d/impl=%s", map[string]string{"basic": "DEVICE_BASIC_INFO", "copy4k": "MEM_BUF_COPY64-4KiB"}[op], threads, im.name)
				b.Run(name, func(b *testing.B) {
					if i == 0 {
						runs = append(runs, measure(b))
					}
					if seen >= len(runs) {
						b.Fatal("impl run before the floor's")
					}
					r := runs[seen][i]
					seen++
					b.ReportMetric(0, "ns/op")
					b.ReportMetric(r.lat["median_us"], "median-µs")
					b.ReportMetric(r.lat["p99_us"], "p99-µs")
					b.ReportMetric(r.lat["p999_us"], "p99.9-µs")
					b.ReportMetric(r.seq["calls_per_s"], "calls/s")
					b.ReportMetric(r.seq["client_cpu_us"], "client-cpu-µs/call")
					b.ReportMetric(r.seq["server_cpu_us"], "server-cpu-µs/call")
				})
			}
		}
	}
}

// serverCPU returns the CPU time, in µs, used so far by process pid (0:
// this one), threads that ended included.
func serverCPU(b *testing.B, pid int) int64 {
	if pid == 0 {
		var r unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &r)
		return r.Utime.Sec*1e6 + r.Utime.Usec + r.Stime.Sec*1e6 + r.Stime.Usec
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// utime and stime are fields 14 and 15, counted after the command
	// name's closing parenthesis, in clock ticks (100 per second).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * 1e4
}

// startMountDaemon runs `neuronfs mount` of a trn2.48xlarge on the given
// transport and returns its mount point and pid once it serves.
func startMountDaemon(b *testing.B, bin, transport string) (string, int) {
	dir := b.TempDir()
	cmd := exec.Command(bin, "mount", "--instance=trn2.48xlarge", "--fuse-transport="+transport, dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		cmd.Wait()
	})
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(20 * time.Millisecond) {
		if got, err := os.ReadFile(dir + "/" + fs.TransportFile); err == nil {
			if strings.TrimSpace(string(got)) != transport {
				b.Fatalf("daemon serves over %q, want %s", got, transport)
			}
			return dir, cmd.Process.Pid
		}
	}
	b.Fatalf("neuronfs mount --fuse-transport=%s did not come up", transport)
	return "", 0
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

// bareGoFuseURingMount is bareGoFuseMount served over io_uring: the
// transport's own floor.
func bareGoFuseURingMount(b *testing.B) string {
	dir := b.TempDir()
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd)
	if err := unix.Mount("bare", dir, "fuse.bare", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		b.Fatal(err)
	}
	root := &gofs.Inode{}
	raw := gofs.NewNodeFS(root, &gofs.Options{OnAdd: func(ctx context.Context) {
		root.AddChild("node", root.NewPersistentInode(ctx, &noopIoctlNode{}, gofs.StableAttr{Mode: syscall.S_IFREG}), false)
	}})
	mopts := &fuse.MountOptions{MaxWrite: 128 << 10}
	server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), mopts)
	if err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		b.Fatal(err)
	}
	tr, err := fuseuring.Attach(server, raw, mopts, fuseuring.Config{FD: fd, MaxWrite: 128 << 10, MaxPages: 32, Depth: 4})
	if err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		b.Fatal(err)
	}
	go tr.ServeDev()
	b.Cleanup(func() { unix.Unmount(dir, 0); tr.Wait() })
	return dir + "/node"
}
