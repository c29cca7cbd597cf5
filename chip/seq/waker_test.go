package seq

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Waiters that take the channel, re-check, and block never miss the last
// of many concurrent changes.
func TestWakerNoLostWakeup(t *testing.T) {
	const target, waiters = 5000, 4
	var w Waker
	var v atomic.Int64
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			for {
				ch := w.Changed()
				if v.Load() >= target {
					return
				}
				select {
				case <-ch:
				case <-time.After(budget):
					t.Errorf("lost wakeup at %d", v.Load())
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range target / 2 {
				v.Add(1)
				w.Wake()
			}
		})
	}
	wg.Wait()
}
