package lockrank

import "sync"

// Mutex is a sync.Mutex with the rank R. The zero value is unlocked.
type Mutex[R Ranker] struct{ mu sync.Mutex }

// Lock takes the lock, after checking the order in checked builds (before
// blocking, so an inversion is reported instead of deadlocking).
func (m *Mutex[R]) Lock() {
	if enabled {
		var r R
		acquire(r.Rank(), m, false)
	}
	m.mu.Lock()
}

// Unlock releases the lock.
func (m *Mutex[R]) Unlock() {
	if enabled {
		release(m)
	}
	m.mu.Unlock()
}

// RWMutex is a sync.RWMutex with the rank R. A goroutine never holds it
// twice, for reading or writing: a second read lock would queue behind a
// waiting writer that waits for the first.
type RWMutex[R Ranker] struct{ mu sync.RWMutex }

// Lock takes the lock for writing.
func (m *RWMutex[R]) Lock() {
	if enabled {
		var r R
		acquire(r.Rank(), m, false)
	}
	m.mu.Lock()
}

// Unlock releases a write lock.
func (m *RWMutex[R]) Unlock() {
	if enabled {
		release(m)
	}
	m.mu.Unlock()
}

// RLock takes the lock for reading.
func (m *RWMutex[R]) RLock() {
	if enabled {
		var r R
		acquire(r.Rank(), m, true)
	}
	m.mu.RLock()
}

// RUnlock releases a read lock.
func (m *RWMutex[R]) RUnlock() {
	if enabled {
		release(m)
	}
	m.mu.RUnlock()
}
