package device

import (
	"context"
	"syscall"
	"time"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// The driver's waits, reproduced wait by wait. None holds a lock while it
// sleeps. A FUSE interrupt (which the kernel sends for ANY signal the
// caller gets: a timer, a profiler, the Go runtime's preemption) ends
// none of them by itself: only the two the driver makes interruptible,
// open while the device is in reset and the reset-ready wait, end early,
// and only when SIGTERM or SIGKILL is pending for the calling thread.

// fatalPoll is how often an interruptible wait looks for a fatal signal
// that came without a FUSE interrupt (a blocked signal raises none).
const fatalPoll = 10 * time.Millisecond

// waiters is a device's wake-ups: every change a waiter may wait for
// closes changed. It lives under the device lock, which its waits drop
// while they sleep; mu points at that lock.
type waiters struct {
	mu      *lockrank.Mutex[lockrank.Device]
	changed chan struct{} // closed on every change waiters may wait for
}

// notifyLocked wakes every waiter of the device; call it, with d.mu held,
// after any change a waiter may be waiting for.
func (w *waiters) notifyLocked() {
	if w.changed != nil {
		close(w.changed)
	}
	w.changed = make(chan struct{})
}

// waitLocked waits, with d.mu held on entry and on return but released
// while sleeping, until ready() holds; it gives up with EBUSY after
// budget. Signals do not end it: every such wait of the driver polls
// with a bounded budget and never looks at them. A closed gone (the
// caller's Caller.Gone: nobody is left to answer) ends it as the budget
// would.
func (w *waiters) waitLocked(budget time.Duration, gone <-chan struct{}, ready func() bool) syscall.Errno {
	if ready() {
		return 0
	}
	deadline := time.NewTimer(budget)
	defer deadline.Stop()
	for !ready() {
		ch := w.changedLocked()
		w.mu.Unlock()
		lockrank.AssertUnlocked("device wait")
		over := false
		select {
		case <-ch:
		case <-deadline.C:
			over = true
		case <-gone:
			over = true
		}
		w.mu.Lock()
		if over {
			if ready() {
				return 0
			}
			return syscall.EBUSY
		}
	}
	return 0
}

// waitFatalLocked waits like waitLocked, without a budget, until ready()
// holds or the caller has SIGTERM or SIGKILL pending (EINTR). It checks
// for the signal at every FUSE interrupt and every fatalPoll.
func (w *waiters) waitFatalLocked(ctx context.Context, fatal func() bool, ready func() bool) syscall.Errno {
	interrupted := ctx.Done()
	var tick *time.Ticker
	for !ready() {
		if fatal() {
			return syscall.EINTR
		}
		if tick == nil {
			tick = time.NewTicker(fatalPoll)
			defer tick.Stop()
		}
		ch := w.changedLocked()
		w.mu.Unlock()
		lockrank.AssertUnlocked("device wait")
		select {
		case <-ch:
		case <-interrupted:
			interrupted = nil // an interrupt is sent once; the tick takes over
		case <-tick.C:
		}
		w.mu.Lock()
	}
	return 0
}

func (w *waiters) changedLocked() chan struct{} {
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}
