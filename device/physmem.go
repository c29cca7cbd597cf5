package device

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// physMem is a device's emulated physical address space: one sparse
// memfd whose file offset is the physical address. Device files open with
// FUSE passthrough to it, so a client's mmap(offset = PA) shares memory
// with the daemon and every other mapper. Unallocated ranges cost nothing;
// freed ranges are punched out, so RSS follows live allocations.
type physMem struct {
	fd   int
	span uint64

	mu      sync.Mutex
	views   map[uint64][]byte   // daemon mappings by start PA
	retired map[uint64][][]byte // smaller mappings replaced by larger ones, still maybe in use

	// inUse is held for reading while a mapping is being read or written
	// and for writing while one is torn down, so a chunk freed by one
	// process is never unmapped under a copy for another.
	inUse sync.RWMutex
}

func newPhysMem(name string, span uint64) (*physMem, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create %s: %w", name, err)
	}
	if err := unix.Ftruncate(fd, int64(span)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size %s to %#x: %w", name, span, err)
	}
	return &physMem{fd: fd, span: span, views: map[uint64][]byte{}, retired: map[uint64][][]byte{}}, nil
}

// view returns the daemon's mapping of [pa, pa+size); both must be page
// aligned. Mappings are cached by start address until discard.
func (m *physMem) view(pa, size uint64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.views[pa]; ok && uint64(len(v)) >= size {
		return v[:size], nil
	}
	if pa+size > m.span || pa+size < pa {
		return nil, fmt.Errorf("physical range %#x+%#x outside the device", pa, size)
	}
	v, err := unix.Mmap(m.fd, int64(pa), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %#x+%#x: %w", pa, size, err)
	}
	if old, ok := m.views[pa]; ok {
		// A copy may still run on the old mapping: unmap it at discard.
		m.retired[pa] = append(m.retired[pa], old)
	}
	m.views[pa] = v
	return v, nil
}

// discard drops the daemon's mapping at pa and returns the memory of
// [pa, pa+size) to the host.
func (m *physMem) discard(pa, size uint64) {
	m.inUse.Lock()
	defer m.inUse.Unlock()
	m.mu.Lock()
	if v, ok := m.views[pa]; ok {
		unix.Munmap(v)
		delete(m.views, pa)
	}
	for _, v := range m.retired[pa] {
		unix.Munmap(v)
	}
	delete(m.retired, pa)
	m.mu.Unlock()
	unix.Fallocate(m.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(pa), int64(size))
}

func (m *physMem) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for pa, v := range m.views {
		unix.Munmap(v)
		delete(m.views, pa)
	}
	for pa, vs := range m.retired {
		for _, v := range vs {
			unix.Munmap(v)
		}
		delete(m.retired, pa)
	}
	unix.Close(m.fd)
}

// resident reports the bytes of physical memory the host backs now.
func (m *physMem) resident() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(m.fd, &st); err != nil {
		return 0, fmt.Errorf("stat physical memory: %w", err)
	}
	return uint64(st.Blocks) * 512, nil
}
