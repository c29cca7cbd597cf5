package device

import (
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
)

// engineMemory is what the DMA engines of one device reach: HBM, host
// memory under the route bit, the special resources (state buffers,
// semaphore areas) and the regions PROGRAM_ENGINE writes, each a window
// mapped once over the device's memfd.
// A descriptor naming any other address makes the engine abort, as an
// AXI decode error does on the chip.
type engineMemory struct {
	fd      int
	windows []*window // sorted by base
	// touch runs before the engine reaches [pa, pa+n) (pending scrub
	// patterns are written then).
	touch func(pa, n uint64)
	// hostOwner finds the engine memory of the device whose host chunk
	// holds a host address (nil: this one's).
	hostOwner      func(pa uint64) *engineMemory
	hostLo, hostHi uint64 // the host window
}

type window struct {
	base, size uint64
	once       sync.Once
	mem        []byte // nil if the mapping failed
}

func newEngineMemory(fd int, f *dhal.ArchFacts) *engineMemory {
	var rs []dhal.Range
	for _, b := range f.HBMBases {
		rs = append(rs, dhal.Range{Base: b, Size: f.HBMSize})
	}
	rs = append(rs, dhal.Range{Base: f.HostBase, Size: dhal.HostMemorySpan})
	for _, r := range f.MmapResources() {
		rs = append(rs, dhal.Range{Base: r.Offset, Size: r.Size})
	}
	rs = append(rs, f.ProgramRegions()...)
	// Overlapping ranges (a TOP_SP's semaphores inside its window) merge
	// into one window.
	sort.Slice(rs, func(i, j int) bool { return rs[i].Base < rs[j].Base })
	m := &engineMemory{fd: fd}
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

// Slice implements dma.Memory. Host addresses of another device's chunks
// reach that device's memory, as host memory is one on a real host.
func (m *engineMemory) Slice(pa, n uint64) ([]byte, bool) {
	if m.hostOwner != nil && pa >= m.hostLo && pa < m.hostHi {
		if other := m.hostOwner(pa); other != nil && other != m {
			return other.local(pa, n)
		}
	}
	return m.local(pa, n)
}

// local slices this device's own memory.
func (m *engineMemory) local(pa, n uint64) ([]byte, bool) {
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
		}
	})
	if w.mem == nil {
		return nil, false
	}
	if m.touch != nil {
		m.touch(pa, n)
	}
	off := pa - w.base
	return w.mem[off : off+n : off+n], true
}

func (m *engineMemory) close() {
	for _, w := range m.windows {
		w.once.Do(func() {}) // no mapping after close
		if w.mem != nil {
			unix.Munmap(w.mem)
			w.mem = nil
		}
	}
}
