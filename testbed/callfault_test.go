package testbed_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/testbed"
)

// allocsEnv makes the test binary, run as a command inside a testbed,
// issue that many MEM_ALLOCs on /dev/neuron0 and print each one's errno.
const allocsEnv = "NEURONFS_TESTBED_ALLOCS"

// allocs is that command: one line, each call's errno name or "ok".
func allocs(n int) int {
	fd, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	handle := make([]byte, 8)
	var out []string
	for range n {
		arg := ioctl.MemAlloc{Size: 4096, MemHandle: uint64(testutil.AddrOf(handle))}
		_, e := testutil.Ioctl(fd, ioctl.CmdMemAlloc, &arg)
		if e != 0 {
			out = append(out, unix.ErrnoName(e))
		} else {
			out = append(out, "ok")
		}
	}
	runtime.KeepAlive(handle)
	fmt.Println(strings.Join(out, " "))
	return 0
}

// runAllocs runs allocs(n) inside tb and returns its line.
func runAllocs(t *testing.T, tb *testbed.Testbed, n int) string {
	t.Helper()
	cmd := tb.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", allocsEnv, n))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("allocations inside the testbed: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// The 3rd MEM_ALLOC fails with ENOMEM, the ones before and after do
// not; from the 2nd on, every one fails.
func TestFailCall(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"), testbed.Faults(testbed.FailCall("MEM_ALLOC", syscall.ENOMEM, 3)))
	if got, want := runAllocs(t, tb, 5), "ok ok ENOMEM ok ok"; got != want {
		t.Errorf("MEM_ALLOCs: %s, want %s", got, want)
	}
	if err := tb.InjectFaults(testbed.FailCallsFrom("MEM_ALLOC", syscall.EIO, 2)); err != nil {
		t.Fatal(err)
	}
	if got, want := runAllocs(t, tb, 4), "ok EIO EIO EIO"; got != want {
		t.Errorf("MEM_ALLOCs: %s, want %s", got, want)
	}
	st, err := tb.State()
	if err != nil || strings.Join(st.Faults, ",") != "fail:MEM_ALLOC:EIO:2+" {
		t.Errorf("state's faults: %q (%v)", st.Faults, err)
	}
	err = tb.InjectFaults("fail:MEM_ALLOC:ENOMEM:0")
	if err == nil || !strings.Contains(err.Error(), "N from 1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a bad aimed fault: %v, want one line", err)
	}
}

// The same seed fails the same MEM_ALLOCs on two hosts.
func TestFailCallsRandomlySameSeed(t *testing.T) {
	fault := testbed.FailCallsRandomly("MEM_ALLOC", syscall.ENOMEM, 50, 1234)
	var lines []string
	for range 2 {
		tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
		if err := tb.InjectFaults(fault); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, runAllocs(t, tb, 24))
	}
	if lines[0] != lines[1] {
		t.Errorf("%s on two hosts:\n%s\n%s", fault, lines[0], lines[1])
	}
	if !strings.Contains(lines[0], "ok") || !strings.Contains(lines[0], "ENOMEM") {
		t.Errorf("%s: %s, want some of each", fault, lines[0])
	}
}
