package chip

import "sync/atomic"

// SwapEvent stores new into event idx only if the event's state (set:
// non-zero) is old, and reports whether it did: a wait that clears or
// sets the event it waited for takes it once, even with two waiters.
func (a Area) SwapEvent(idx int, old bool, new uint32) bool {
	w := a.word(4 * uint64(idx))
	for {
		cur := atomic.LoadUint32(w)
		if (cur != 0) != old {
			return false
		}
		if atomic.CompareAndSwapUint32(w, cur, new) {
			return true
		}
	}
}
