package dma

import (
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Space is what the DMA engines of one device reach: a set of windows
// (for a device: HBM, host memory under the route bit, the special
// resources, the regions PROGRAM_ENGINE writes), each mapped once over the
// device's physical-memory file and kept until Close, so slices of it
// stay valid without a lock. A descriptor naming any other address makes
// the engine abort, as an AXI decode error does on the chip.
type Space struct {
	fd      int
	windows []*window // sorted by base
	// Touch runs before anything reaches [pa, pa+n) (a device writes
	// pending scrub patterns then).
	Touch func(pa, n uint64)
	// HostOwner finds the space of the device whose host chunk holds a
	// host address in [HostLo, HostHi) (nil: this one's): host memory is
	// one on a real host.
	HostOwner      func(pa uint64) *Space
	HostLo, HostHi uint64
	// Admit runs before a write to [pa, pa+n) and may refuse it (nil:
	// every write is admitted): the host's memory limit.
	Admit func(pa, n uint64) bool
}

// Range is one window of a Space.
type Range struct{ Base, Size uint64 }

type window struct {
	base, size uint64
	once       sync.Once
	mem        []byte      // nil if the mapping failed
	ready      atomic.Bool // mem is set (Release reads it without once)
}

// NewSpace returns the space of windows rs over the file fd, whose offsets
// are physical addresses. Overlapping ranges merge into one window.
func NewSpace(fd int, rs []Range) *Space {
	rs = append([]Range(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Base < rs[j].Base })
	m := &Space{fd: fd}
	for _, r := range rs {
		if n := len(m.windows); n > 0 && m.windows[n-1].base+m.windows[n-1].size >= r.Base {
			w := m.windows[n-1]
			w.size = max(w.size, r.Base+r.Size-w.base)
			continue
		}
		m.windows = append(m.windows, &window{base: r.Base, size: r.Size})
	}
	return m
}

// Slice implements Memory. Host addresses of another device's chunks
// reach that device's memory.
func (m *Space) Slice(pa, n uint64) ([]byte, bool) {
	if m.HostOwner != nil && pa >= m.HostLo && pa < m.HostHi {
		if other := m.HostOwner(pa); other != nil && other != m {
			return other.Local(pa, n)
		}
	}
	return m.Local(pa, n)
}

// SliceWrite implements Memory: Slice, for a write the owning space
// admits.
func (m *Space) SliceWrite(pa, n uint64) ([]byte, bool) {
	owner := m
	if m.HostOwner != nil && pa >= m.HostLo && pa < m.HostHi {
		if other := m.HostOwner(pa); other != nil {
			owner = other
		}
	}
	b, ok := owner.Local(pa, n)
	if ok && owner.Admit != nil && !owner.Admit(pa, n) {
		return nil, false
	}
	return b, ok
}

// Release drops the daemon's own page mappings of every window; the
// memory stays in the file, and the next access maps it again. A
// file-backed space does this to keep the daemon's resident set small.
func (m *Space) Release() {
	for _, w := range m.windows {
		if w.ready.Load() {
			unix.Madvise(w.mem, unix.MADV_DONTNEED)
		}
	}
}

// Local slices this space's own windows.
func (m *Space) Local(pa, n uint64) ([]byte, bool) {
	i := sort.Search(len(m.windows), func(i int) bool { return m.windows[i].base+m.windows[i].size > pa })
	if i == len(m.windows) {
		return nil, false
	}
	w := m.windows[i]
	if pa < w.base || n > w.size || pa-w.base > w.size-n {
		return nil, false
	}
	w.once.Do(func() {
		v, err := unix.Mmap(m.fd, int64(w.base), int(w.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
		if err == nil {
			w.mem = v
			w.ready.Store(true)
		}
	})
	if w.mem == nil {
		return nil, false
	}
	if m.Touch != nil {
		m.Touch(pa, n)
	}
	off := pa - w.base
	return w.mem[off : off+n : off+n], true
}

// Close unmaps every window; nothing may use the space after.
func (m *Space) Close() {
	for _, w := range m.windows {
		w.once.Do(func() {}) // no mapping after close
		if w.mem != nil {
			unix.Munmap(w.mem)
			w.mem = nil
		}
	}
}
