package testbed_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/testbed"
)

// children lists this process's child processes but the exit guard.
func children(t *testing.T) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); !strings.HasPrefix(string(cmd), "neuronfs-exitguard") {
				out[pid] = true
			}
		}
	}
	return out
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Creating and tearing down 100 testbeds, some with a command, leaves no
// mount, process, descriptor, goroutine or heap behind.
func Test100TestbedsLeaveNothing(t *testing.T) {
	// The first testbed starts the exit guard, which stays.
	t.Run("warm", func(t *testing.T) { testbed.New(t, testbed.Instance("inf2.xlarge")) })
	fds, goroutines, procs := openFDs(t), runtime.NumGoroutine(), children(t)
	heap := heapInUse()
	var roots []string
	for i := range 100 {
		t.Run("", func(t *testing.T) {
			tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
			roots = append(roots, tb.Root())
			if i%10 == 0 {
				// One left running: the teardown kills it.
				cmd := tb.Command("sleep", "60")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go cmd.Wait()
			}
		})
		if t.Failed() {
			return
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roots {
		if strings.Contains(string(mi), " "+r+" ") {
			t.Errorf("%s is still mounted", r)
		}
	}
	// Goroutines and descriptors of the last teardowns may take a
	// moment to go (a supervisor noticing its command's end).
	deadline := time.Now().Add(10 * time.Second)
	for {
		nfds, ng, leaked := openFDs(t), runtime.NumGoroutine(), 0
		for pid := range children(t) {
			if !procs[pid] {
				leaked++
			}
		}
		if nfds <= fds && ng <= goroutines+2 && leaked == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 100 testbeds: %d descriptors (were %d), %d goroutines (were %d), %d new child processes", nfds, fds, ng, goroutines, leaked)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The heap goes back to where it was, give or take what the runtime
	// and the race detector keep: a testbed's emulated host is far more
	// than 160 KiB, so a leaked one per teardown would show.
	if grown := int64(heapInUse()) - int64(heap); grown > heapSlack {
		t.Errorf("after 100 testbeds the heap holds %d KiB more than before", grown>>10)
	}
}

// cleanupTB is a benchmark's TB whose cleanups run when asked, so that
// each iteration's teardown can be timed.
type cleanupTB struct {
	testing.TB
	cleanups []func()
}

func (c *cleanupTB) Cleanup(f func()) { c.cleanups = append(c.cleanups, f) }

func (c *cleanupTB) teardown() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
}

// The cost of a testbed in a test: New and one command's first ioctl on
// a trn2.48xlarge (up to the command's exit), then the teardown.
func BenchmarkNewCommandTeardown(b *testing.B) {
	var up, down time.Duration
	for range b.N {
		tb := &cleanupTB{TB: b}
		start := time.Now()
		h := testbed.New(tb, testbed.Instance("trn2.48xlarge"))
		cmd := h.Command(os.Args[0])
		cmd.Env = append(os.Environ(), ioctlEnv+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		mid := time.Now()
		tb.teardown()
		up += mid.Sub(start)
		down += time.Since(mid)
	}
	b.ReportMetric(up.Seconds()/float64(b.N), "s-to-ioctl/op")
	b.ReportMetric(down.Seconds()/float64(b.N), "s-teardown/op")
}

// heapSlack is how much the heap may grow over 100 testbeds.
const heapSlack = 16 << 20

// heapInUse is the heap's live size after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
