package seq

import "sync/atomic"

// Waker is the wake-up half of a Sync, for cores whose semaphores live
// elsewhere (device memory clients map, BAR0 windows): Changed hands out
// a channel, installed on demand, and Wake closes it. Call Wake after
// every store that changes a semaphore or event, whoever made it (an
// ioctl, a mapped store found by a sweep, a DMA write, a program); it
// costs one atomic load when nobody waits. The zero Waker is ready.
type Waker struct {
	ch atomic.Pointer[chan struct{}]
}

// Changed returns a channel closed by the first Wake after this call;
// a store made before it is seen by the caller's re-check.
func (w *Waker) Changed() <-chan struct{} {
	for {
		if p := w.ch.Load(); p != nil {
			return *p
		}
		c := make(chan struct{})
		if w.ch.CompareAndSwap(nil, &c) {
			return c
		}
	}
}

// Wake releases every waiter that took a channel before it.
func (w *Waker) Wake() {
	if w.ch.Load() == nil {
		return
	}
	if p := w.ch.Swap(nil); p != nil {
		close(*p)
	}
}
