package device

import (
	"sort"
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Pinned host memory (HOST_MEM_PIN, HOST_MEM_UNPIN, driver 2.28): a
// process registers ranges of its own memory, which the driver pins so
// that zero copies inside them need not pin again. Pins belong to the
// process, host-wide, keyed by start address; they go when the process
// detaches from its last device. A daemon cannot pin another process's
// pages, and nothing here depends on the pages staying put, so a pin is
// the driver's bookkeeping: overlap and unknown-address errors as the
// driver's, and no physical address (the driver's answer for memory that
// is not physically contiguous).

const noPA = ^uint64(0)

type pinRange struct{ start, end uint64 }

// pins is the host's table, under System.mu.
type pins map[int32][]pinRange

func hostMemPin(r *Request, v *ioctl.HostMemPin) Result {
	v.PA = noPA
	if v.VA == 0 || v.Size == 0 || v.VA+v.Size < v.VA {
		return Errno(syscall.EINVAL)
	}
	if !accessOK(v.VA, v.Size) || !r.mapped(v.VA, v.Size) {
		return Errno(syscall.EFAULT) // the pages cannot be pinned
	}
	s := r.Sys()
	if !s.pin(r.Caller.Tgid, pinRange{v.VA, v.VA + v.Size}) {
		return Errno(syscall.EEXIST)
	}
	if copyOut(r, r.Arg, v) != 0 {
		return Errno(syscall.EFAULT) // the pin stays, as in the driver
	}
	return 0
}

func hostMemUnpin(r *Request, v *ioctl.HostMemUnpin) Result {
	if !r.Sys().unpin(r.Caller.Tgid, v.VA) {
		return Errno(syscall.ENOENT)
	}
	return 0
}

// mapped reports whether the caller can read the first and last byte of
// the range: the pages the driver would fail to pin are unmapped ones.
func (r *Request) mapped(va, size uint64) bool {
	var b [1]byte
	n1, _ := r.Mem.ReadAt(b[:], va)
	n2, _ := r.Mem.ReadAt(b[:], va+size-1)
	return n1 == 1 && n2 == 1
}

func (s *System) pin(tgid int32, p pinRange) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.pins[tgid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].start >= p.start })
	if (i < len(rs) && rs[i].start < p.end) || (i > 0 && rs[i-1].end > p.start) {
		return false
	}
	if s.pins == nil {
		s.pins = pins{}
	}
	rs = append(rs, pinRange{})
	copy(rs[i+1:], rs[i:])
	rs[i] = p
	s.pins[tgid] = rs
	return true
}

func (s *System) unpin(tgid int32, start uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.pins[tgid]
	for i, p := range rs {
		if p.start == start {
			s.pins[tgid] = append(rs[:i], rs[i+1:]...)
			return true
		}
	}
	return false
}

// PinnedRanges counts tgid's pins.
func (s *System) PinnedRanges(tgid int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pins[tgid])
}

// detached runs after tgid detached from a device: a process attached to
// no device any more loses its pins. Callers hold no device lock.
func (s *System) detached(tgid int32) {
	for _, d := range s.Devices {
		if d.IsAttached(tgid) {
			return
		}
	}
	s.mu.Lock()
	delete(s.pins, tgid)
	s.mu.Unlock()
}
