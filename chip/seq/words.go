package seq

import "sync/atomic"

// Words is a core's 256 semaphores and 256 events in memory: a Sync
// without locks, its values atomic words and its waits a Waker.
type Words struct {
	sems [256]atomic.Uint32
	evts [256]atomic.Bool
	wake Waker
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

// Changed implements Sync.
func (w *Words) Changed() <-chan struct{} { return w.wake.Changed() }

func (w *Words) changed() { w.wake.Wake() }

// Reset zeroes every semaphore and event, as NC_RESET does.
func (w *Words) Reset() {
	for i := range w.sems {
		w.sems[i].Store(0)
		w.evts[i].Store(false)
	}
	w.changed()
}
