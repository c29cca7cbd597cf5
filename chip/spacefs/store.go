package spacefs

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// extentSize is the unit in which physical addresses get room in the
// store: large enough that the map stays small for gigabytes of device
// memory, small enough that scattered pages waste little.
const extentSize = 2 << 20

// store keeps one physical space's written bytes. Extents are placed in
// the order they are first written and reused once wholly punched, so the
// file's length follows the memory in use, not the addresses.
type store struct {
	fd   int
	span uint64

	// mu is read-held across every pread and pwrite, so that a punch,
	// which may hand an extent to another address, never runs under one.
	mu   lockrank.RWMutex[lockrank.SpaceStore]
	ext  map[uint64]int64 // extent index → offset in fd
	free []int64          // offsets of wholly punched extents
	end  int64            // the next offset never used
}

func newStore(fd int, span uint64) *store {
	return &store{fd: fd, span: span, ext: make(map[uint64]int64)}
}

// pieces calls f for each run of [off, off+n) inside one extent.
func pieces(off, n uint64, f func(idx, in, at, l uint64) error) error {
	for at := uint64(0); at < n; {
		pa := off + at
		idx, in := pa/extentSize, pa%extentSize
		l := min(extentSize-in, n-at)
		if err := f(idx, in, at, l); err != nil {
			return err
		}
		at += l
	}
	return nil
}

func (s *store) check(off, n uint64) error {
	if off > s.span || n > s.span-off {
		return syscall.EINVAL
	}
	return nil
}

// read fills dest from off; addresses never written read as zeros.
func (s *store) read(dest []byte, off uint64) error {
	n := uint64(len(dest))
	if off >= s.span {
		return nil
	}
	n = min(n, s.span-off)
	clear(dest[n:])
	s.mu.RLock()
	defer s.mu.RUnlock()
	return pieces(off, n, func(idx, in, at, l uint64) error {
		o, ok := s.ext[idx]
		if !ok {
			clear(dest[at : at+l])
			return nil
		}
		return preadFull(s.fd, dest[at:at+l], o+int64(in))
	})
}

// write stores data at off, giving extents room as it goes.
func (s *store) write(data []byte, off uint64) error {
	if err := s.check(off, uint64(len(data))); err != nil {
		return err
	}
	return s.placed(off, uint64(len(data)), func(o int64, in, at, l uint64) error {
		return pwriteFull(s.fd, data[at:at+l], o+int64(in))
	})
}

// placed calls f, read-holding the map, for each run of [off, off+n)
// once every extent of it has an offset in the file (o).
func (s *store) placed(off, n uint64, f func(o int64, in, at, l uint64) error) error {
	for {
		s.mu.RLock()
		if s.hasAll(off, n) {
			err := pieces(off, n, func(idx, in, at, l uint64) error { return f(s.ext[idx], in, at, l) })
			s.mu.RUnlock()
			return err
		}
		s.mu.RUnlock()
		s.place(off, n)
	}
}

func (s *store) hasAll(off, n uint64) bool {
	all := true
	pieces(off, n, func(idx, _, _, _ uint64) error {
		_, ok := s.ext[idx]
		all = all && ok
		return nil
	})
	return all
}

// place gives every extent of [off, off+n) an offset in the file.
func (s *store) place(off, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pieces(off, n, func(idx, _, _, _ uint64) error {
		if _, ok := s.ext[idx]; ok {
			return nil
		}
		if k := len(s.free); k > 0 {
			s.ext[idx], s.free = s.free[k-1], s.free[:k-1]
			return nil
		}
		s.ext[idx] = s.end
		s.end += extentSize
		return nil
	})
}

// reserve makes the file hold [off, off+n), so that a later write there
// cannot fail for want of space.
func (s *store) reserve(off, n uint64) error {
	if err := s.check(off, n); err != nil {
		return err
	}
	return s.placed(off, n, func(o int64, in, _, l uint64) error {
		return Allocate(s.fd, o+int64(in), int64(l))
	})
}

// punch forgets [off, off+n): it reads back as zeros and its blocks
// return to the filesystem; wholly punched extents are reused.
func (s *store) punch(off, n uint64) error {
	if err := s.check(off, n); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return pieces(off, n, func(idx, in, _, l uint64) error {
		o, ok := s.ext[idx]
		if !ok {
			return nil
		}
		if err := Punch(s.fd, o+int64(in), int64(l)); err != nil {
			return err
		}
		if l == extentSize {
			delete(s.ext, idx)
			s.free = append(s.free, o)
		}
		return nil
	})
}

// blocks reports the 512-byte blocks the file holds on disk.
func (s *store) blocks() uint64 {
	var st unix.Stat_t
	if unix.Fstat(s.fd, &st) != nil {
		return 0
	}
	return uint64(st.Blocks)
}

func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("store read at %#x: %w", off, err)
		}
		if n == 0 { // past the end: never written
			clear(b)
			return nil
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("store write at %#x: %w", off, err)
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}
