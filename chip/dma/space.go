package dma

import (
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Space is what the DMA engines of one device reach: a set of windows
// (for a device: HBM, host memory under the route bit, the special
// resources, the regions PROGRAM_ENGINE writes), each mapped once over the
// device's physical-memory file and kept until Close, so slices of it
// stay valid without a lock. A descriptor naming any other address makes
// the engine abort, as an AXI decode error does on the chip.
//
// Addresses decode in this order (resolve): a neighbour window reaches
// the peer's space, a host address the space of the device whose host
// chunk holds it, anything else this space; then an alias of that space
// moves the address to where its memory is. Writes into an effect window
// (a semaphore area) perform its operation instead of storing bytes.
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
	// PeerRoute decodes a neighbour-window address into the link and the
	// address inside the peer (dhal.ArchFacts.PeerRoute); Peer returns
	// the space at the other end of a link, or nil if no device is there.
	PeerRoute func(pa uint64) (link int, local uint64, ok bool)
	Peer      func(link int) *Space
	// effects are windows whose writes have side effects, sorted by base.
	effects []Effect
	// aliases are ranges whose memory lies elsewhere in the file, sorted.
	aliases []Alias
}

// Range is one window of a Space.
type Range struct{ Base, Size uint64 }

// Contains reports whether [pa, pa+n) lies inside r.
func (r Range) Contains(pa, n uint64) bool {
	return pa >= r.Base && n <= r.Size && pa-r.Base <= r.Size-n
}

type window struct {
	base, size uint64
	once       sync.Once
	mem        []byte      // nil if the mapping failed; never written after once
	ready      atomic.Bool // mem is mapped: set after once, cleared by Close
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

// Slice implements Memory.
func (m *Space) Slice(pa, n uint64) ([]byte, bool) {
	t, a, ok := m.resolve(pa, n)
	if !ok {
		return nil, false
	}
	return t.Local(a, n)
}

// SliceWrite implements Memory: Slice, for a write the owning space
// admits; effect windows are plain memory here.
func (m *Space) SliceWrite(pa, n uint64) ([]byte, bool) {
	t, a, ok := m.resolve(pa, n)
	if !ok {
		return nil, false
	}
	return t.sliceWrite(a, n)
}

func (m *Space) sliceWrite(pa, n uint64) ([]byte, bool) {
	b, ok := m.Local(pa, n)
	if ok && m.Admit != nil && !m.Admit(pa, n) {
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
	b, ok := m.view(pa, n)
	if ok && m.Touch != nil {
		m.Touch(pa, n)
	}
	return b, ok
}

// view is Local without the Touch hook.
func (m *Space) view(pa, n uint64) ([]byte, bool) {
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
	if !w.ready.Load() {
		return nil, false // the mapping failed, or the space is closed
	}
	off := pa - w.base
	return w.mem[off : off+n : off+n], true
}

// Missing reports how many bytes of the pages under [pa, pa+n) the file
// does not hold in memory (mincore over the window): what a write there
// would add. Unlike lseek(SEEK_HOLE), which scans on to the next hole
// however far, it costs what the range is long. It reports n where no
// window answers.
func (m *Space) Missing(pa, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	const page = 4096
	lo, hi := pa&^(page-1), (pa+n+page-1)&^(page-1)
	b, ok := m.view(lo, hi-lo)
	if !ok {
		return n
	}
	// mincore in batches of a fixed vector: no allocation per write.
	var vec [4096]byte
	var missing uint64
	for off := uint64(0); off < uint64(len(b)); off += uint64(len(vec)) * page {
		part := b[off:min(uint64(len(b)), off+uint64(len(vec))*page)]
		v := vec[:uint64(len(part))/page]
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&part[0])), uintptr(len(part)), uintptr(unsafe.Pointer(&v[0]))); e != 0 {
			return n
		}
		for _, r := range v {
			if r&1 == 0 {
				missing += page
			}
		}
	}
	return missing
}

// Close unmaps every window. It leaves mem as it is: a scan abandoned
// past its deadline (fs's raw reaper) may still call Maps, which only
// compares addresses; every access to the bytes checks ready first.
func (m *Space) Close() {
	for _, w := range m.windows {
		w.once.Do(func() {}) // no mapping after close
		if w.ready.Swap(false) {
			unix.Munmap(w.mem)
		}
	}
}

// Maps reports whether virtual address va lies in one of the space's own
// window mappings: the daemon's view of the file, told apart from a
// client's mapping of it in the same process.
func (m *Space) Maps(va uint64) bool {
	for _, w := range m.windows {
		if !w.ready.Load() {
			continue
		}
		start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(w.mem))))
		if va >= start && va-start < uint64(len(w.mem)) {
			return true
		}
	}
	return false
}
