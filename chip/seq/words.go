package seq

import "sync/atomic"

// Words is a core's 256 semaphores and 256 events in memory, a Sync
// without locks: the values are atomic words, and a waiter's channel is
// installed on demand and closed by the first change after it, so a
// change costs one atomic load when nobody waits.
type Words struct {
	sems [256]atomic.Uint32
	evts [256]atomic.Bool
	wake atomic.Pointer[chan struct{}]
}

var _ Sync = (*Words)(nil)

func (w *Words) Semaphore(idx uint8) uint32 { return w.sems[idx].Load() }
func (w *Words) Event(idx uint8) bool       { return w.evts[idx].Load() }

// UpdateSemaphore implements Sync; a host's write or increment uses it
// too.
func (w *Words) UpdateSemaphore(idx uint8, op SemOp, v uint32) {
	s := &w.sems[idx]
	switch op {
	case SemAdd:
		s.Add(v)
	case SemSub:
		s.Add(-v)
	case SemSet:
		s.Store(v)
	}
	w.changed()
}

func (w *Words) SetEvent(idx uint8, state bool) {
	w.evts[idx].Store(state)
	w.changed()
}

func (w *Words) CompareAndSetEvent(idx uint8, old, new bool) bool {
	if !w.evts[idx].CompareAndSwap(old, new) {
		return false
	}
	if old != new {
		w.changed()
	}
	return true
}

// Changed implements Sync: the channel installed is closed by the first
// change whose store comes after it; a change that came before is seen
// by the caller's re-check.
func (w *Words) Changed() <-chan struct{} {
	for {
		if p := w.wake.Load(); p != nil {
			return *p
		}
		c := make(chan struct{})
		if w.wake.CompareAndSwap(nil, &c) {
			return c
		}
	}
}

func (w *Words) changed() {
	if w.wake.Load() == nil {
		return
	}
	if p := w.wake.Swap(nil); p != nil {
		close(*p)
	}
}

// Reset zeroes every semaphore and event, as NC_RESET does.
func (w *Words) Reset() {
	for i := range w.sems {
		w.sems[i].Store(0)
		w.evts[i].Store(false)
	}
	w.changed()
}
