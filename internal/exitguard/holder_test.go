//go:build linux

package exitguard

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The holder shares this process's file table, so a descriptor opened
// after it started is its too; and it ends when its guard does.
func TestHoldFiles(t *testing.T) {
	g, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.HoldFiles(); err != nil {
		g.cmd.Process.Kill()
		t.Fatal(err)
	}
	holder := g.Holder()
	pidfd, err := unix.PidfdOpen(holder, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ours, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", w.Fd()))
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", holder, w.Fd()))
	if err != nil || theirs != ours {
		t.Errorf("the holder's fd %d is %q (%v), ours %q", w.Fd(), theirs, err, ours)
	}
	// Every signal but SIGKILL is blocked in it: a stray one must not
	// end it early, nor run Go's handler in a process without a runtime.
	if blk, err := sigBlocked(holder); err != nil || blk|1<<(unix.SIGKILL-1)|1<<(unix.SIGSTOP-1) != ^uint64(0) {
		t.Errorf("the holder blocks %#x (%v), want every signal", blk, err)
	}
	unix.Kill(holder, unix.SIGTERM)

	g.cmd.Process.Kill()
	deadline := time.Now().Add(callBudget)
	for !ended(pidfd) {
		if time.Now().After(deadline) {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			t.Fatalf("the holder still runs %v after its guard ended", callBudget)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var info unix.Siginfo
	unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED, nil)
}

// sigBlocked is pid's blocked signal mask (the kernel never shows SIGKILL
// or SIGSTOP in it).
func sigBlocked(pid int) (uint64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "SigBlk:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no SigBlk line for %d", pid)
}
