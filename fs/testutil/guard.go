package testutil

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/internal/exitguard"
)

// StartGuard starts the test binary's exit guard and lets every child it
// starts join it (JoinGuard), so that a binary that times out, panics or
// is killed leaves no mount, process, namespace or loop device behind.
// TestMain calls it before m.Run; a failure is printed, and the tests
// that need the guard then fail (Guard).
//
// It parses the command line (m.Run would) for -test.timeout: just before
// that timeout's panic the guard aborts the binary's mounts, while an
// abort can still end every wait on them (exitguard.Guard.AbortAt).
func StartGuard() {
	g, err := exitguard.Shared()
	if err == nil {
		err = g.Export()
	}
	if err == nil {
		// The binary's exit must not close files of a mount it serves
		// itself (exitguard.Guard.HoldFiles).
		err = g.HoldFiles()
	}
	if d := testTimeout(); err == nil && d > 0 {
		err = g.AbortAt(time.Now().Add(d - min(d/10, timeoutMargin)))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
}

// timeoutMargin is how long before -test.timeout the guard aborts: the
// timer of the testing package starts a little after StartGuard's.
const timeoutMargin = 2 * time.Second

// testTimeout is -test.timeout, or 0.
func testTimeout() time.Duration {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return 0
	}
	d, _ := g.Get().(time.Duration)
	return d
}

// JoinGuard registers a child of a test binary (a helper process) with
// the binary's guard: TestMain calls it first in a helper's mode.
func JoinGuard() {
	if err := exitguard.Join(); err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
}

// Guard is the test binary's exit guard, started on first use.
func Guard(t testing.TB) *exitguard.Guard {
	t.Helper()
	g, err := exitguard.Shared()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// GuardMount registers what is mounted at dir with the binary's guard
// until the test ends. Call it right after mounting and before
// registering the test's own unmount with t.Cleanup: cleanups run last
// in, first out, so the guard lets go only after that unmount.
func GuardMount(t testing.TB, dir string) {
	t.Helper()
	r, err := Guard(t).Mount(dir)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, r)
}

// GuardCommand registers an undo command with the binary's guard until
// the test ends; like GuardMount, before the test's own undo is
// registered with t.Cleanup.
func GuardCommand(t testing.TB, argv ...string) {
	t.Helper()
	r, err := Guard(t).Command(argv...)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, r)
}

// GuardProcess registers a started child with the binary's guard until
// the test ends; call it before waiting for the child.
func GuardProcess(t testing.TB, pid int) {
	t.Helper()
	r, err := Guard(t).Process(pid)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, r)
}

// releaseAtEnd lets the guard forget r when the test ends, unless it
// failed or panicked: its cleanups still run then, but it may not have
// undone what it registered, and the guard undoes that when the binary
// exits. Undoing twice is harmless: a mount or process already gone is
// skipped, an undo command run again fails quietly.
func releaseAtEnd(t testing.TB, r exitguard.Reg) {
	t.Cleanup(func() {
		if !t.Failed() && !panicking() {
			r.Release()
		}
	})
}

// panicking reports whether the calling goroutine is unwinding a panic.
// testing runs a panicking test's cleanups from its recovering deferred
// call, with t.Failed still false, and no API says why cleanups run: the
// runtime's panic frame below them does.
func panicking() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			return true
		}
		if !more {
			return false
		}
	}
}
