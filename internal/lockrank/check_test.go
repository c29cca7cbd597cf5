package lockrank

import (
	"strings"
	"testing"
)

// catch replaces the fatal report for the duration of a test.
func catch(t *testing.T) *[]string {
	var got []string
	old, wasEnabled := violation, enabled
	violation = func(msg string) { got = append(got, msg) }
	enabled = true
	t.Cleanup(func() { violation, enabled = old, wasEnabled })
	return &got
}

func TestOrderHolds(t *testing.T) {
	got := catch(t)
	var dev Mutex[Device]
	var eng Mutex[Engine]
	var pool Mutex[Pool]
	dev.Lock()
	eng.Lock()
	pool.Lock()
	pool.Unlock()
	eng.Unlock()
	dev.Unlock()
	if len(*got) != 0 {
		t.Fatalf("violations in order: %v", *got)
	}
}

// An inverted acquisition, the deadlock of issue 15 in miniature: a path
// took the device lock while holding a lower one.
func TestInversionReported(t *testing.T) {
	got := catch(t)
	var dev Mutex[Device]
	var low Mutex[Pool]
	low.Lock()
	dev.Lock()
	dev.Unlock()
	low.Unlock()
	if len(*got) != 1 || !strings.Contains((*got)[0], "taking Device") {
		t.Fatalf("violations = %v, want one naming Device", *got)
	}
}

func TestSecondReadLockReported(t *testing.T) {
	got := catch(t)
	var m RWMutex[Pattern]
	m.RLock()
	m.RLock()
	m.RUnlock()
	m.RUnlock()
	if len(*got) != 1 || !strings.Contains((*got)[0], "twice") {
		t.Fatalf("violations = %v, want one naming a second read lock", *got)
	}
}

func TestSameRankTwiceReported(t *testing.T) {
	got := catch(t)
	var a, b Mutex[Engine]
	a.Lock()
	b.Lock()
	b.Unlock()
	a.Unlock()
	if len(*got) != 1 {
		t.Fatalf("violations = %v, want one", *got)
	}
}

func TestAssertUnlocked(t *testing.T) {
	got := catch(t)
	var m Mutex[Metrics]
	AssertUnlocked("free")
	m.Lock()
	AssertUnlocked("a wait")
	m.Unlock()
	if len(*got) != 1 || !strings.Contains((*got)[0], "a wait while holding Metrics") {
		t.Fatalf("violations = %v", *got)
	}
}

func TestGoroutinesAreSeparate(t *testing.T) {
	got := catch(t)
	var dev Mutex[Device]
	var pool Mutex[Pool]
	pool.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		dev.Lock() // another goroutine holds only a lower... higher rank: fine here
		dev.Unlock()
	}()
	<-done
	pool.Unlock()
	if len(*got) != 0 {
		t.Fatalf("violations across goroutines: %v", *got)
	}
}

func TestEnabledInTests(t *testing.T) {
	if benchmarking() {
		t.Skip("benchmarks run unchecked")
	}
	if !Enabled() {
		t.Fatal("lock checking is off in a test binary")
	}
}

// The checker tells goroutines apart by goroutineKey: stable within one
// goroutine, distinct between live ones.
func TestGoroutineKey(t *testing.T) {
	k := goroutineKey()
	if k == 0 || goroutineKey() != k {
		t.Fatalf("key %#x not stable within a goroutine", k)
	}
	const n = 8
	keys := make(chan uintptr, n)
	hold := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			keys <- goroutineKey()
			<-hold // alive until every key is read
		}()
	}
	seen := map[uintptr]bool{k: true}
	for i := 0; i < n; i++ {
		g := <-keys
		if seen[g] {
			t.Fatalf("two live goroutines share key %#x", g)
		}
		seen[g] = true
	}
	close(hold)
}

func BenchmarkGoroutineKey(b *testing.B) {
	for b.Loop() {
		goroutineKey()
	}
}
