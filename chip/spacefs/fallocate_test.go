package spacefs

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeFallocate answers as a 6.1 tmpfs does to a caller a signal hits:
// EINTR for the calls interrupt picks, having allocated nothing.
type fakeFallocate struct {
	interrupt func(call int, n int64) bool
	calls     int
	held      [][2]int64 // the ranges allocated, in order
}

func (f *fakeFallocate) call(fd int, mode uint32, off, n int64) error {
	f.calls++
	if mode != unix.FALLOC_FL_KEEP_SIZE {
		return unix.EINVAL
	}
	if f.interrupt(f.calls, n) {
		return unix.EINTR
	}
	f.held = append(f.held, [2]int64{off, n})
	return nil
}

// The cause of issue 44's short MEM_BUF_COPY64: an interrupted
// fallocate refused the write it was reserving room for. Interrupted
// pieces are redone, smaller, until the whole range is held, in order,
// once.
func TestAllocateRedoesInterruptedPieces(t *testing.T) {
	for _, c := range []struct {
		name      string
		off, n    int64
		interrupt func(call int, n int64) bool
	}{
		{"first call", 4096, 8192, func(call int, _ int64) bool { return call == 1 }},
		{"every other call", 0, 5<<20 + 4096, func(call int, _ int64) bool { return call%2 == 1 }},
		{"anything over a page, ten times", 1 << 20, 3 << 20, func(call int, n int64) bool { return n > 4096 && call <= 10 }},
		{"every call over 64 KiB", 12288, 2<<20 + 100, func(_ int, n int64) bool { return n > 64<<10 }},
	} {
		f := &fakeFallocate{interrupt: c.interrupt}
		if err := allocate(f.call, 3, c.off, c.n); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		next := c.off
		for _, r := range f.held {
			if r[0] != next || r[1] <= 0 || r[1] > allocPiece {
				t.Fatalf("%s: allocated %v, want pieces of at most %d from %#x", c.name, f.held, allocPiece, c.off)
			}
			next += r[1]
		}
		if next != c.off+c.n {
			t.Errorf("%s: allocated up to %#x, want %#x (%v)", c.name, next, c.off+c.n, f.held)
		}
	}
}

// A range every call of which is interrupted fails with EINTR after a
// bounded number of calls, and other errors at once.
func TestAllocateGivesUp(t *testing.T) {
	f := &fakeFallocate{interrupt: func(int, int64) bool { return true }}
	err := allocate(f.call, 3, 0, 8<<20)
	if !errors.Is(err, unix.EINTR) || f.calls > allocRetries+20 {
		t.Errorf("always interrupted: %v after %d calls", err, f.calls)
	}
	nospace := func(int, uint32, int64, int64) error { return unix.ENOSPC }
	if err := allocate(nospace, 3, 0, 8192); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("no space: %v", err)
	}
	calls := 0
	interrupted := func(int, uint32, int64, int64) error { calls++; return unix.EINTR }
	if err := punch(interrupted, 3, 0, 8192); !errors.Is(err, unix.EINTR) || calls != allocRetries {
		t.Errorf("punch always interrupted: %v after %d calls", err, calls)
	}
}

// On a real tmpfs (/dev/shm, where 6.1 interrupts fallocate) and on the
// test's directory, Allocate holds the whole range while signals keep
// reaching the calling thread, and Punch gives it back.
func TestAllocateUnderSignals(t *testing.T) {
	for _, dir := range []string{"/dev/shm", t.TempDir()} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		f, err := os.CreateTemp(dir, "allocate-test")
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(f.Name())
		defer f.Close()
		const size = 8 << 20
		errs := make(chan error)
		tids := make(chan int)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			for i := 0; i < 20; i++ {
				if err := Allocate(int(f.Fd()), 0, size); err != nil {
					errs <- err
					return
				}
				if blocks := fileBlocks(t, f); blocks*512 < size {
					errs <- errors.New("allocated, but the file holds less")
					return
				}
				if err := Punch(int(f.Fd()), 0, size); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		stop := signalStorm(<-tids)
		err = <-errs
		stop()
		if err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

func fileBlocks(t *testing.T, f *os.File) int64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Error(err)
	}
	return st.Blocks
}

// signalStorm sends SIGURG (the Go runtime's preemption signal, which it
// handles) to thread tid every 50 us until stopped.
func signalStorm(tid int) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	return func() { close(done); <-stopped }
}
