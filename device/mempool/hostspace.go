package mempool

import (
	"sort"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// HostSpace is the host's DMA address space. The kernel's DMA allocator
// serves every device of a host from it, so a host chunk's address is
// unique on the host and a DMA engine of any device may name it. Every
// Pool of an emulated host shares one; the bytes of a chunk live in the
// memory of the device that allocated it, which Owner tells.
type HostSpace struct {
	mu     lockrank.RWMutex[lockrank.HostSpace]
	pool   *genpool
	ranges []hostRange // allocated ranges, by start
}

type hostRange struct {
	start, end uint64
	owner      any
}

// NewHostSpace returns an empty host address space, [HostRangeStart,
// HostRangeEnd).
func NewHostSpace() *HostSpace {
	return &HostSpace{pool: newGenpool(HostRangeStart, HostRangeEnd-HostRangeStart, HostRangeStart)}
}

// alloc stands in for dma_alloc_coherent, which returns memory aligned to
// the smallest power-of-two number of pages covering the size.
func (h *HostSpace) alloc(size uint64, owner any) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if size == 0 || size > h.pool.availBytes() {
		return 0, false
	}
	align := uint64(Granule)
	for align < size {
		align <<= 1
	}
	addr, ok := h.pool.allocAlign(size, align)
	if !ok {
		return 0, false
	}
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start > addr })
	h.ranges = append(h.ranges, hostRange{})
	copy(h.ranges[i+1:], h.ranges[i:])
	h.ranges[i] = hostRange{start: addr, end: addr + size, owner: owner}
	return addr, true
}

func (h *HostSpace) free(addr, size uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pool.free(addr, size)
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start >= addr })
	if i < len(h.ranges) && h.ranges[i].start == addr {
		h.ranges = append(h.ranges[:i], h.ranges[i+1:]...)
	}
}

// Owner returns the owner (what the Pool was built with) of the chunk
// holding host address addr (without the route bit).
func (h *HostSpace) Owner(addr uint64) (any, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start > addr })
	if i > 0 && addr < h.ranges[i-1].end {
		return h.ranges[i-1].owner, true
	}
	return nil, false
}
