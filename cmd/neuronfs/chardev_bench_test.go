package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	clients["openbench"] = func() int {
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_BENCH_N"))
		path := os.Args[0] // an ordinary file every client can open
		start := time.Now()
		for i := 0; i < n; i++ {
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			unix.Close(fd)
		}
		openNs := float64(time.Since(start).Nanoseconds()) / float64(n)
		fd, _ := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		var st unix.Stat_t
		start = time.Now()
		for i := 0; i < n; i++ {
			unix.Fstat(fd, &st)
		}
		fstatNs := float64(time.Since(start).Nanoseconds()) / float64(n)
		// A file mapping as ld.so makes one (private, read-only), and its
		// unmapping, which no filter looks at.
		start = time.Now()
		for i := 0; i < n; i++ {
			b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			unix.Munmap(b)
		}
		mmapNs := float64(time.Since(start).Nanoseconds()) / float64(n)
		fmt.Printf("%f %f %f\n", openNs, fstatNs, mmapNs)
		return 0
	}
	// timeit runs the command in NEURONFS_TIMEIT_CMD (a JSON array)
	// NEURONFS_TIMEIT_N times, one after the other, and prints the median
	// wall time of one run in ns: the workload alone, without the start of
	// the daemon around it.
	clients["timeit"] = func() int {
		var argv []string
		if err := json.Unmarshal([]byte(os.Getenv("NEURONFS_TIMEIT_CMD")), &argv); err != nil || len(argv) == 0 {
			fmt.Fprintln(os.Stderr, "NEURONFS_TIMEIT_CMD:", err)
			return 1
		}
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_TIMEIT_N"))
		var times []float64
		for i := 0; i < max(n, 1); i++ {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stderr = os.Stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, argv, err)
				return 1
			}
			times = append(times, float64(time.Since(start).Nanoseconds()))
		}
		slices.Sort(times)
		fmt.Printf("%f\n", times[len(times)/2])
		return 0
	}
}

// impls are the two ways run gives CMD its devices, measured side by side.
var impls = []struct{ name, flag string }{{"no-filter", "--no-chardev=true"}, {"seccomp", "--no-chardev=false"}}

// BenchmarkFilteredSyscalls measures what the character-device filter
// costs a program's non-device open, fstat and file mmap, against
// --no-chardev in the same run (`benchstat -col /impl`; the metrics are
// ns/open, ns/fstat and ns/mmap).
func BenchmarkFilteredSyscalls(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "run", "--instance=trn1.2xlarge", impl.flag, "--", os.Args[0], "__client", "openbench")
				cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_LOCKCHECK=0", "NEURONFS_BENCH_N=20000")
				var err error
				if out, err = cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
			var openNs, fstatNs, mmapNs float64
			fmt.Sscan(strings.TrimSpace(string(out)), &openNs, &fstatNs, &mmapNs)
			b.ReportMetric(openNs, "ns/open")
			b.ReportMetric(fstatNs, "ns/fstat")
			b.ReportMetric(mmapNs, "ns/mmap")
		})
	}
}

// pythonModules is the fixed import list of the Python workload: about
// 1,500 opens and 2,500 stats with a warm bytecode cache.
var pythonModules = []string{
	"json", "decimal", "email.mime.multipart", "http.client", "xml.etree.ElementTree",
	"asyncio", "sqlite3", "unittest", "argparse", "logging.handlers",
	"concurrent.futures", "urllib.request", "csv", "datetime", "fractions",
	"statistics", "tarfile", "zipfile", "pickle", "subprocess",
}

// manyLibs builds, with gcc, a program linked against n small shared
// libraries, and returns the command that runs it.
func manyLibs(b *testing.B, n int) []string {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		b.Fatalf("gcc is needed for this benchmark: %v", err)
	}
	dir := b.TempDir()
	os.Chmod(dir, 0o755)
	var main strings.Builder
	var link []string
	for i := 0; i < n; i++ {
		src := filepath.Join(dir, fmt.Sprintf("l%d.c", i))
		os.WriteFile(src, fmt.Appendf(nil, "int f%d(int x) { return x + %d; }\n", i, i), 0o644)
		lib := filepath.Join(dir, fmt.Sprintf("libl%d.so", i))
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, src).CombinedOutput(); err != nil {
			b.Fatalf("gcc: %v\n%s", err, out)
		}
		fmt.Fprintf(&main, "int f%d(int);\n", i)
		link = append(link, fmt.Sprintf("-ll%d", i))
	}
	main.WriteString("int main(void) { int s = 0;\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&main, "s += f%d(%d);\n", i, i)
	}
	main.WriteString("return s == 0; }\n")
	src := filepath.Join(dir, "main.c")
	os.WriteFile(src, []byte(main.String()), 0o644)
	bin := filepath.Join(dir, "manylibs")
	// No rpath: ld.so searches LD_LIBRARY_PATH, as for a framework's
	// libraries, with a failed open in each directory before the right one.
	args := append([]string{"-o", bin, src, "-L" + dir}, link...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	return []string{"env", "LD_LIBRARY_PATH=/nonexistent:" + dir, bin}
}

// BenchmarkRunWorkload measures whole programs under run, with and without
// the filter in the same run: Python importing pythonModules, and ld.so
// loading a program linked against 200 shared libraries. ns/run is the
// median wall time of one program run (of 5, started one after another by
// a client inside run), without the daemon's start.
func BenchmarkRunWorkload(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Fatalf("python3 is needed for this benchmark: %v", err)
	}
	// The interpreter itself, not a wrapper such as a pyenv shim.
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Fatal(err)
	}
	py = strings.TrimSpace(string(out))
	pyCmd := []string{py, "-c", "import " + strings.Join(pythonModules, ", ")}
	// Warm the bytecode cache, so every measured run reads the same files.
	if out, err := exec.Command(pyCmd[0], pyCmd[1:]...).CombinedOutput(); err != nil {
		b.Fatalf("python: %v\n%s", err, out)
	}
	workloads := []struct {
		name string
		argv []string
	}{{"python-import", pyCmd}, {"ldso-200-libs", manyLibs(b, 200)}}
	for _, w := range workloads {
		argv, _ := json.Marshal(w.argv)
		for _, impl := range impls {
			b.Run("work="+w.name+"/impl="+impl.name, func(b *testing.B) {
				var out []byte
				for b.Loop() {
					cmd := exec.Command(os.Args[0], "run", "--instance=trn1.2xlarge", impl.flag, "--", os.Args[0], "__client", "timeit")
					cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_LOCKCHECK=0", "NEURONFS_TIMEIT_N=5", "NEURONFS_TIMEIT_CMD="+string(argv))
					cmd.Stderr = os.Stderr
					var err error
					if out, err = cmd.Output(); err != nil {
						b.Fatal(err)
					}
				}
				ns, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				b.ReportMetric(ns, "ns/run")
			})
		}
	}
}
