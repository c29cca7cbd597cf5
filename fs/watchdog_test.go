package fs

import (
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device"
)

// Slots are found by probing from the caller's tid, every one can be
// taken, one more request goes unwatched (and is counted), and ending a
// request frees its slot.
func TestWatchdogSlots(t *testing.T) {
	if n := unsafe.Sizeof(watchSlot{}); n != 64 {
		t.Errorf("a slot is %d bytes, want one cache line", n)
	}
	w := newWatchdog(&FS{})
	var got []int
	for range watchSlots {
		i := w.begin(opIoctl, 1, 0, 7, 7)
		if i < 0 {
			t.Fatalf("no slot after %d", len(got))
		}
		got = append(got, i)
	}
	if got[0] != 7 || got[1] != 8 {
		t.Errorf("slots %v...: probing should start at the tid", got[:2])
	}
	if i := w.begin(opIoctl, 1, 0, 7, 7); i != -1 || w.unwatched.Load() != 1 {
		t.Fatalf("full array: slot %d, unwatched %d", i, w.unwatched.Load())
	}
	for _, i := range got {
		w.end(i)
	}
	for i := range w.slots {
		if w.slots[i].start.Load() != 0 {
			t.Fatalf("slot %d still taken", i)
		}
	}
	var nilW *watchdog
	nilW.end(nilW.begin(opOpen, 0, 0, 1, 1)) // an FS built without Mount
}

// The request path's cost: one begin and one end.
func BenchmarkWatchdogBeginEnd(b *testing.B) {
	w := newWatchdog(&FS{})
	b.ReportAllocs()
	for b.Loop() {
		w.end(w.begin(opIoctl, 0xc0084e18, 3, 4242, 4240))
	}
}

func BenchmarkWatchdogBeginEndParallel(b *testing.B) {
	w := newWatchdog(&FS{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.end(w.begin(opIoctl, 0xc0084e18, 3, 4242, 4240))
		}
	})
}

// Scans race with requests starting and ending (under -race this checks
// the slot protocol); every request is reported at most once.
func TestWatchdogScanWhileServing(t *testing.T) {
	sys, err := device.NewSystem(device.Config{Instance: "inf2.xlarge"})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	l := logrus.New()
	l.SetOutput(io.Discard)
	hook := &countHook{}
	l.AddHook(hook)
	w := newWatchdog(&FS{sys: sys, log: logrus.NewEntry(l)})
	zero := func(string, uint32, time.Duration) time.Duration { return 0 }
	w.budgetHook.Store(&zero)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := w.begin(opFlush, 0, 0, int32(g), int32(g))
				requests.Add(1)
				time.Sleep(50 * time.Microsecond)
				w.end(i)
			}
		}()
	}
	for range 20 {
		w.scan()
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if slow := hook.count("slow request"); slow == 0 || int64(slow) > requests.Load() {
		t.Errorf("%d slow-request reports for %d requests", slow, requests.Load())
	}
	if fin := hook.count("slow request finished"); fin > hook.count("slow request") {
		t.Errorf("%d finished lines for %d reports", fin, hook.count("slow request"))
	}
}

type countHook struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *countHook) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[e.Message]++
	return nil
}

func (h *countHook) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}
