package device

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// physMem is a device's emulated physical address space: one sparse
// memfd whose file offset is the physical address. Device files open with
// FUSE passthrough to it, so a client's mmap(offset = PA) shares memory
// with the daemon and every other mapper. Unallocated ranges cost nothing;
// freed ranges are punched out, so RSS follows live allocations.
//
// The daemon reaches it through the windows of engineMemory, mapped once
// and never unmapped while the device lives, so no lock guards an access:
// a chunk being copied is pinned instead (mempool.Pool.Pin), and its range
// is punched and reused only after the last access ended.
type physMem struct {
	fd   int
	span uint64
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
	return &physMem{fd: fd, span: span}, nil
}

// punch returns the memory of [pa, pa+size) to the host; it reads back as
// zeros.
func (m *physMem) punch(pa, size uint64) {
	unix.Fallocate(m.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(pa), int64(size))
}

func (m *physMem) close() { unix.Close(m.fd) }

// resident reports the bytes of physical memory the host backs now.
func (m *physMem) resident() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(m.fd, &st); err != nil {
		return 0, fmt.Errorf("stat physical memory: %w", err)
	}
	return uint64(st.Blocks) * 512, nil
}
