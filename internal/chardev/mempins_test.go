package chardev

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startThread starts a thread that is not the process's main thread and
// returns its id and the function that ends it.
func startThread(t *testing.T) (uint32, func()) {
	t.Helper()
	tids := make(chan uint32)
	exit := make(chan struct{})
	start := func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			tids <- uint32(unix.Gettid())
			<-exit
		}()
	}
	start()
	tid := <-tids
	if tid == uint32(os.Getpid()) {
		start() // the main thread never exits; the second goroutine gets another
		tid = <-tids
	}
	return tid, func() { close(exit) }
}

// A pin is reused while its thread lives and the process has not
// exec'd, reads the thread's memory, and is never handed out once the
// thread is gone or after an exec.
func TestMemPins(t *testing.T) {
	p := newMemPins()
	defer p.close()
	tid, end := startThread(t)
	a, err := p.get(tid)
	if err != nil {
		t.Fatal(err)
	}
	if a.pidfd < 0 {
		t.Skip("no thread pidfds (Linux < 6.9): pins are not cached")
	}
	word := uint64(0x5eed)
	var got uint64
	if _, err := unix.Pread(a.mem, unsafe.Slice((*byte)(unsafe.Pointer(&got)), 8), int64(uintptr(unsafe.Pointer(&word)))); err != nil || got != word {
		t.Fatalf("pin read %#x, %v", got, err)
	}
	b, err := p.get(tid)
	if err != nil || b != a {
		t.Fatalf("second get: %v, %v; want the cached pin", b, err)
	}
	p.put(b)

	p.execed()
	c, err := p.get(tid)
	if err != nil || c == a {
		t.Fatalf("get after an exec: %v, %v; want a fresh pin", c, err)
	}
	p.put(c)
	p.put(a) // a is out of the cache: this was its last reference
	if _, err := unix.FcntlInt(uintptr(a.pidfd), unix.F_GETFD, 0); err == nil && a.pidfd != c.pidfd && a.pidfd != c.mem {
		t.Errorf("pidfd %d of a retired pin still open after its last reference", a.pidfd)
	}

	end()
	// The thread's exit is asynchronous to its goroutine's end: once its
	// /proc entry is gone, no pin of it may be handed out.
	for {
		if _, err := os.Stat("/proc/self/task/" + itoa(tid)); err != nil {
			break
		}
		runtime.Gosched()
	}
	if d, err := p.get(tid); err == nil {
		t.Errorf("got %v for exited thread %d", d, tid)
		p.put(d)
	}
}

func itoa(n uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// BenchmarkMemPinCached measures a cached pin: what each supervised ioctl
// pays for its caller's memory once the thread was seen.
func BenchmarkMemPinCached(b *testing.B) {
	p := newMemPins()
	defer p.close()
	tid := uint32(unix.Gettid())
	for b.Loop() {
		e, err := p.get(tid)
		if err != nil {
			b.Fatal(err)
		}
		p.put(e)
	}
}
