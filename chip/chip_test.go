package chip

import (
	"sync"
	"testing"
)

func TestAreaOps(t *testing.T) {
	a := make(Area, AreaSize)
	sem := func(op Op, idx int) uint64 { return ReadWindow + uint64(op)*WindowStride + 4*uint64(idx) }
	if cur, inc := a.Apply(sem(Set, 3), Set, 10); cur != 10 || inc != -1 {
		t.Fatalf("set: %d, %d", cur, inc)
	}
	if cur, inc := a.Apply(sem(Inc, 3), Inc, 5); cur != 15 || inc != 3 {
		t.Fatalf("increment: %d, %d", cur, inc)
	}
	if cur, _ := a.Apply(sem(Dec, 3), Dec, 16); cur != 0xffffffff {
		t.Fatalf("decrement wraps as the hardware's 32-bit word: %#x", cur)
	}
	if v, ok := a.Read32(sem(Inc, 3)); !ok || v != 0xffffffff || a.Semaphore(3) != v {
		t.Fatalf("window read %#x %v", v, ok)
	}
	a.SetEvent(7, 9)
	if a.Event(7) != 9 || OpAt(4*7) != Set {
		t.Fatal("event word")
	}
	if _, ok := a.Read32(AreaSize); ok {
		t.Fatal("read past the area")
	}
}

// Mapped stores into the windows are taken exactly once by sweeps, even
// with sweeps running concurrently.
func TestSweepExactlyOnce(t *testing.T) {
	a := make(Area, AreaSize)
	var mu sync.Mutex
	incs := 0
	var wg sync.WaitGroup
	for round := 0; round < 200; round++ {
		a[ReadWindow+uint64(Inc)*WindowStride+4*5] = 1 // a client's store of 1
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.Sweep(func(op Op, idx int, v uint32) {
					if op == Inc && idx == 5 && v == 1 {
						mu.Lock()
						incs++
						mu.Unlock()
					}
				})
			}()
		}
		wg.Wait()
	}
	if incs != 200 || a.Semaphore(5) != 200 {
		t.Fatalf("%d increments seen, semaphore %d; want 200 each", incs, a.Semaphore(5))
	}
}

// The ringer of an idle core does the part of its doorbell that does not
// wait and returns; the wait goes on in a goroutine, doorbells rung
// meanwhile are served after it, in order; a halt makes the core ignore
// doorbells until Reset. Every ring tells the engines once: by wake, or
// by a serve that was not woken.
func TestDoorbell(t *testing.T) {
	var b Doorbell
	var mu sync.Mutex
	var served []uint32
	told := 0
	wake := func() { mu.Lock(); told++; mu.Unlock() }
	block := make(chan struct{})
	serve := newFuncServer(func(v uint32, woken bool) func() {
		mu.Lock()
		if !woken {
			told++
		}
		served = append(served, v)
		first := len(served) == 1
		mu.Unlock()
		if first {
			return func() { <-block } // the first run waits for its DMA
		}
		return nil
	})
	b.Ring(DoorbellRun, serve, false, wake)  // returns before its wait is over
	b.Ring(DoorbellRun, serve, false, wake)  // queued: returns at once
	b.Ring(DoorbellHalt, serve, false, wake) // queued
	b.Ring(DoorbellRun, serve, false, wake)  // after the halt: ignored
	if mu.Lock(); len(served) != 1 {
		t.Errorf("served %v while the first run waits, want only it", served)
	}
	mu.Unlock()
	close(block)
	for {
		b.mu.Lock()
		idle := !b.running
		b.mu.Unlock()
		if idle {
			break
		}
	}
	mu.Lock()
	got := append([]uint32(nil), served...)
	mu.Unlock()
	if len(got) != 3 || got[0] != DoorbellRun || got[1] != DoorbellRun || got[2] != DoorbellHalt {
		t.Fatalf("served %v, want run, run, halt", got)
	}
	b.Reset()
	b.Ring(DoorbellHalt, serve, false, wake)
	b.Ring(DoorbellRun, serve, false, wake) // served inline after the halt: ignored
	if mu.Lock(); len(served) != 4 {
		t.Errorf("after reset the doorbell was not served: %v", served)
	}
	if told != 6 {
		t.Errorf("6 rings told the engines %d times", told)
	}
	mu.Unlock()
}

// funcServer serves a doorbell with a function that returns the work
// left (nil: done), kept by the work's identity until finish.
type funcServer struct {
	f     func(v uint32, woken bool) func()
	mu    sync.Mutex
	rests map[*doorbellWork]func()
}

func newFuncServer(f func(v uint32, woken bool) func()) *funcServer {
	return &funcServer{f: f, rests: map[*doorbellWork]func(){}}
}

func (s *funcServer) beginDoorbell(v uint32, woken bool) *doorbellWork {
	rest := s.f(v, woken)
	if rest == nil {
		return nil
	}
	w := &doorbellWork{v: v}
	s.mu.Lock()
	s.rests[w] = rest
	s.mu.Unlock()
	return w
}

func (s *funcServer) finishDoorbell(w *doorbellWork) {
	s.mu.Lock()
	rest := s.rests[w]
	delete(s.rests, w)
	s.mu.Unlock()
	rest()
}
