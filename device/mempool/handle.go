package mempool

import (
	"fmt"
	"syscall"
)

// Memory-handle table geometry (neuron_mc_handle.c).
const (
	handleL1Size    = 512
	handleL2Size    = 8192
	HandleTableSize = handleL1Size * handleL2Size // 4,194,304 slots; valid handles are 1..HandleTableSize-1
)

// handleTable maps the small integers user space holds (mem handles) to
// chunks. Like the driver's table it is two-level, filled lazily, starts at
// index 1 and reuses released indices last-in first-out. The driver threads
// its free list through the table entries; a stack of released indices
// plus the lowest never-issued index hands out the same sequence.
type handleTable struct {
	l1       [handleL1Size]*[handleL2Size]*Chunk
	released []uint64 // LIFO
	next     uint64   // lowest index never handed out
	limit    uint64   // HandleTableSize (smaller in tests)
	// down mirrors the driver's "service down" state: once the table runs
	// out of never-used indices it refuses every alloc, free and lookup.
	down bool
}

func (t *handleTable) init(limit uint64) {
	t.next = 1
	t.limit = limit
}

func (t *handleTable) slot(h uint64) **Chunk {
	l2 := t.l1[h/handleL2Size]
	if l2 == nil {
		l2 = new([handleL2Size]*Chunk)
		t.l1[h/handleL2Size] = l2
	}
	return &l2[h%handleL2Size]
}

// alloc stores c and returns its handle. The driver gives up (ENOENT, and
// the table stays unusable) when the index it would hand out is the last
// one, because it must always know a next free index.
func (t *handleTable) alloc(c *Chunk) (uint64, error) {
	if t.down {
		return 0, fmt.Errorf("mempool: handle table is out of service: %w", syscall.ENOENT)
	}
	var h uint64
	if n := len(t.released); n > 0 {
		h = t.released[n-1]
		t.released = t.released[:n-1]
	} else {
		h = t.next
		if h+1 >= t.limit {
			t.down = true
			return 0, fmt.Errorf("mempool: handle table out of entries: %w", syscall.ENOENT)
		}
		t.next = h + 1
	}
	*t.slot(h) = c
	return h, nil
}

// find returns the chunk stored under h, or nil for 0, out-of-range
// indices, never-used or released slots, and everything once down.
func (t *handleTable) find(h uint64) *Chunk {
	if t.down || h == 0 || h >= t.limit {
		return nil
	}
	l2 := t.l1[h/handleL2Size]
	if l2 == nil {
		return nil
	}
	return l2[h%handleL2Size]
}

// release frees h for reuse.
func (t *handleTable) release(h uint64) error {
	if t.find(h) == nil {
		return fmt.Errorf("mempool: release of invalid handle %d: %w", h, syscall.ENOENT)
	}
	*t.slot(h) = nil
	t.released = append(t.released, h)
	return nil
}
