package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// BenchmarkMountReady measures a whole daemon start: from exec to the
// moment its sysfs answers, and its resident memory once idle.
func BenchmarkMountReady(b *testing.B) {
	for _, tc := range []struct {
		name, instance string
		devices        int
	}{{"devices=1", "trn2.3xlarge", 1}, {"devices=16", "trn2.48xlarge", 16}} {
		b.Run(tc.name, func(b *testing.B) {
			testutil.RequireFUSE(b)
			var rssKiB int64
			for b.Loop() {
				dir := b.TempDir()
				cmd := exec.Command(os.Args[0], "mount", "--instance="+tc.instance, dir)
				cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				// Ready = the last device's files answer.
				last := filepath.Join(dir, fmt.Sprintf("sys/devices/virtual/neuron_device/neuron%d/core_count", tc.devices-1))
				for {
					if _, err := os.Stat(last); err == nil {
						break
					}
					time.Sleep(200 * time.Microsecond)
				}
				b.StopTimer()
				time.Sleep(100 * time.Millisecond) // idle
				rssKiB = max(rssKiB, vmRSS(b, cmd.Process.Pid))
				cmd.Process.Signal(syscall.SIGTERM)
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(rssKiB)/1024, "rss-MiB")
		})
	}
}

func vmRSS(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
