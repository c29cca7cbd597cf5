package chip

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/spacefs"
)

// Backing says where the devices' physical memory lives.
type Backing struct {
	// Dir is a directory on a real filesystem holding one sparse file
	// per device, whose cold pages the kernel can write back and reclaim;
	// "" is a memfd per device, which lives in host RAM for good (on a
	// host without swap) but is faster.
	Dir string
	// Compact puts the spaces in Dir's compact store even where the
	// filesystem could hold them directly (--memory-backing store:DIR).
	Compact bool

	// store serves the physical spaces when Dir's filesystem cannot hold
	// a file as long as one (ext4: 16 TiB); see Open.
	store *spacefs.Server
}

// Open readies the backing for physical spaces of span bytes. A
// directory whose filesystem ends files before span gets a store server
// (package spacefs) that keeps the spaces compactly there; Close ends it.
func (b Backing) Open(span uint64) (Backing, error) {
	if b.Dir == "" || b.store != nil {
		return b, nil
	}
	if b.Compact {
		var err error
		if b.store, err = spacefs.Start(b.Dir); err != nil {
			return b, err
		}
		return b, nil
	}
	fd, err := b.create("probe")
	if err != nil {
		return b, err
	}
	err = unix.Ftruncate(fd, int64(span))
	unix.Close(fd)
	switch err {
	case nil:
		return b, nil
	case unix.EFBIG:
		if b.store, err = spacefs.Start(b.Dir); err != nil {
			return b, fmt.Errorf("%s ends files before the devices' highest physical address %#x, and %w", b.Dir, span, err)
		}
		return b, nil
	}
	return b, fmt.Errorf("size a physical-memory file in %s to %#x: %w", b.Dir, span, err)
}

// Close ends what Open started; the chips must be closed first.
func (b Backing) Close() {
	if b.store != nil {
		b.store.Close()
	}
}

func (b Backing) String() string {
	switch {
	case b.Dir == "":
		return "memfd"
	case b.Compact:
		return "store:" + b.Dir
	}
	return "file:" + b.Dir
}

// physMem is a device's emulated physical address space: one sparse file
// whose offset is the physical address, a memfd or a file on a real
// filesystem (Backing). Device files open with FUSE passthrough to it, so
// a client's mmap(offset = PA) shares memory with the daemon and every
// other mapper. Unallocated ranges cost nothing; freed ranges are punched
// out, so what the host holds follows live, written memory.
//
// The daemon reaches it through the windows of its dma.Space, mapped once
// and never unmapped while the device lives, so no lock guards an access:
// a chunk being copied is pinned instead (mempool.Pool.Pin), and its range
// is punched and reused only after the last access ended.
type physMem struct {
	fd   int
	span uint64
}

func newPhysMem(name string, span uint64, b Backing) (*physMem, error) {
	if b.store != nil {
		fd, err := b.store.Create(name, span)
		if err != nil {
			return nil, err
		}
		return &physMem{fd: fd, span: span}, nil
	}
	fd, err := b.create(name)
	if err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(fd, int64(span)); err != nil {
		unix.Close(fd)
		if err == unix.EFBIG {
			// ext4 ends files at 16 TiB; Open puts a store in front.
			return nil, fmt.Errorf("size %s to %#x (its highest physical address): %w: the backing was not opened for that span", name, span, err)
		}
		return nil, fmt.Errorf("size %s to %#x: %w", name, span, err)
	}
	if b.Dir == "" {
		if err := sealSize(fd); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("seal the size of %s: %w", name, err)
		}
	}
	return &physMem{fd: fd, span: span}, nil
}

// create opens an empty physical-memory file. A file-backed one has no
// name: nothing is left in the directory when the daemon dies.
func (b Backing) create(name string) (int, error) {
	if b.Dir == "" {
		fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			return -1, fmt.Errorf("memfd_create %s: %w", name, err)
		}
		return fd, nil
	}
	dir, err := unix.Open(b.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("physical memory of %s: %w", name, err)
	}
	defer unix.Close(dir)
	fd, err := spacefs.UnnamedFile(dir, name)
	if err != nil {
		return -1, fmt.Errorf("physical memory of %s in %s: %w", name, b.Dir, err)
	}
	return fd, nil
}

// punch returns the memory of [pa, pa+size) to the host; it reads back as
// zeros.
func (m *physMem) punch(pa, size uint64) {
	spacefs.Punch(m.fd, int64(pa), int64(size))
}

// reserve makes the file hold [pa, pa+n), so a write there cannot fail
// for want of space (which a mapped write would learn as SIGBUS). A
// signal never fails it (spacefs.Allocate): on a 6.1 tmpfs one did, and
// the write it guarded was refused as if the backing were full.
func (m *physMem) reserve(pa, n uint64) error {
	return spacefs.Allocate(m.fd, int64(pa), int64(n))
}

func (m *physMem) close() { unix.Close(m.fd) }

// resident reports the bytes of physical memory the backing holds now:
// host RAM for a memfd, disk blocks for a file.
func (m *physMem) resident() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(m.fd, &st); err != nil {
		return 0, fmt.Errorf("stat physical memory: %w", err)
	}
	return uint64(st.Blocks) * 512, nil
}
