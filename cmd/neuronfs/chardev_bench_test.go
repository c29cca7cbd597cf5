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
		fmt.Printf("%f %f\n", openNs, fstatNs)
		return 0
	}
}

// BenchmarkFilteredSyscalls measures what the character-device filter
// costs a program's non-device open and fstat, against --no-chardev in the
// same run (`benchstat -col /impl`; the metrics are ns/open and ns/fstat).
func BenchmarkFilteredSyscalls(b *testing.B) {
	for _, impl := range []struct{ name, flag string }{{"no-filter", "--no-chardev=true"}, {"seccomp", "--no-chardev=false"}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "run", "--instance=trn1.2xlarge", impl.flag, "--", os.Args[0], "__client", "openbench")
				cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_BENCH_N=20000")
				var err error
				if out, err = cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
			var openNs, fstatNs float64
			fmt.Sscan(strings.TrimSpace(string(out)), &openNs, &fstatNs)
			b.ReportMetric(openNs, "ns/open")
			b.ReportMetric(fstatNs, "ns/fstat")
		})
	}
}
