package lockrank

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// enabled turns checking on in test binaries that run tests (benchmarks
// measure the daemon as it ships), and for daemons started by tests with
// NEURONFS_LOCKCHECK=1; NEURONFS_LOCKCHECK=0 turns it off.
var enabled = func() bool {
	switch os.Getenv("NEURONFS_LOCKCHECK") {
	case "1":
		return true
	case "0":
		return false
	}
	return testing.Testing() && !benchmarking()
}()

// benchmarking reports whether this test binary was asked to run
// benchmarks.
func benchmarking() bool {
	for i, a := range os.Args {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "test.bench" {
			continue
		}
		if !hasVal && i+1 < len(os.Args) {
			val = os.Args[i+1]
		}
		return val != ""
	}
	return false
}

// Enabled reports whether this process checks lock ranks.
func Enabled() bool { return enabled }

type held struct {
	rank Rank
	lock any
	read bool
}

var (
	heldMu sync.Mutex
	holds  = map[uintptr][]held{} // by goroutine (goroutineKey)
)

// violation reports a broken rule. A test binary must not survive one (a
// handler's panic guard would turn a panic into EIO and hide it), so it
// prints the stack, runs the exit hooks and exits; the package's own
// tests replace it.
var violation = func(msg string) {
	buf := make([]byte, 64<<10)
	n := runtime.Stack(buf, false)
	fmt.Fprintf(os.Stderr, "lockrank: %s\n%s\n", msg, buf[:n])
	runExitHooks()
	os.Exit(3)
}

var (
	hooksMu   sync.Mutex // a leaf of its own: taken by nothing that locks
	exitHooks = map[*func()]bool{}
)

// BeforeExit registers what must run before a violation ends the process
// (a FUSE server aborts its connection, or its callers would wait in the
// kernel for answers that never come); the returned func unregisters it.
func BeforeExit(fn func()) (cancel func()) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	p := &fn
	exitHooks[p] = true
	return func() {
		hooksMu.Lock()
		defer hooksMu.Unlock()
		delete(exitHooks, p)
	}
}

func runExitHooks() {
	hooksMu.Lock()
	var fns []func()
	for p := range exitHooks {
		fns = append(fns, *p)
	}
	hooksMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func acquire(r Rank, lock any, read bool) {
	if r == rankNone || r >= rankCount {
		violation(fmt.Sprintf("lock %T has no valid rank", lock))
	}
	id := goroutineKey()
	var msg string
	heldMu.Lock()
	for _, h := range holds[id] {
		if h.lock == lock {
			msg = fmt.Sprintf("%s lock taken twice by one goroutine (read: %v, then %v)", r, h.read, read)
			break
		}
		if h.rank >= r {
			msg = fmt.Sprintf("lock order: taking %s (rank %d) while holding %s (rank %d)", r, r, h.rank, h.rank)
			break
		}
	}
	// Recorded even when wrong, so the release that follows balances.
	holds[id] = append(holds[id], held{rank: r, lock: lock, read: read})
	heldMu.Unlock()
	if msg != "" {
		violation(msg)
	}
}

func release(lock any) {
	id := goroutineKey()
	heldMu.Lock()
	hs := holds[id]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].lock == lock {
			hs = append(hs[:i], hs[i+1:]...)
			if len(hs) == 0 {
				delete(holds, id)
			} else {
				holds[id] = hs
			}
			heldMu.Unlock()
			return
		}
	}
	heldMu.Unlock()
	// Unlocked by another goroutine than the one that locked: allowed
	// by sync, but no lock of the daemon is handed over like that.
	violation("unlock of a lock this goroutine does not hold")
}

// AssertUnlocked checks, in checked builds, that the calling goroutine
// holds no ranked lock: call it where the goroutine is about to wait
// (a sleep, a channel receive, a poll of shared memory, user memory
// access that may fault) or to call back up into a layer that locks.
func AssertUnlocked(where string) {
	if !enabled {
		return
	}
	id := goroutineKey()
	heldMu.Lock()
	hs := holds[id]
	heldMu.Unlock()
	if len(hs) == 0 {
		return
	}
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.rank.String()
	}
	violation(fmt.Sprintf("%s while holding %s", where, strings.Join(names, ", ")))
}
