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

// pinTable is the host's pins by process.
type pinTable struct {
	s      *System
	ranges map[int32][]pinRange // under s.mu
}

func hostMemPin(r *Request, v *ioctl.HostMemPin) Result {
	v.PA = noPA
	if v.VA == 0 || v.Size == 0 || v.VA+v.Size < v.VA {
		return Errno(syscall.EINVAL)
	}
	if !accessOK(v.VA, v.Size) || !r.mapped(v.VA, v.Size) {
		return Errno(syscall.EFAULT) // the pages cannot be pinned
	}
	s := r.Sys()
	if !s.pins.pin(r.Caller.Tgid, pinRange{v.VA, v.VA + v.Size}) {
		return Errno(syscall.EEXIST)
	}
	if copyOut(r, r.Arg, v) != 0 {
		return Errno(syscall.EFAULT) // the pin stays, as in the driver
	}
	return 0
}

func hostMemUnpin(r *Request, v *ioctl.HostMemUnpin) Result {
	if !r.Sys().pins.unpin(r.Caller.Tgid, v.VA) {
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

// pin records tgid's range pr; false when it overlaps one of tgid's pins.
func (p *pinTable) pin(tgid int32, pr pinRange) bool {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	rs := p.ranges[tgid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].start >= pr.start })
	if (i < len(rs) && rs[i].start < pr.end) || (i > 0 && rs[i-1].end > pr.start) {
		return false
	}
	if p.ranges == nil {
		p.ranges = map[int32][]pinRange{}
	}
	rs = append(rs, pinRange{})
	copy(rs[i+1:], rs[i:])
	rs[i] = pr
	p.ranges[tgid] = rs
	return true
}

// unpin drops tgid's pin that starts at start; false when there is none.
func (p *pinTable) unpin(tgid int32, start uint64) bool {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	rs := p.ranges[tgid]
	for i, pr := range rs {
		if pr.start == start {
			p.ranges[tgid] = append(rs[:i], rs[i+1:]...)
			return true
		}
	}
	return false
}

// count counts tgid's pins.
func (p *pinTable) count(tgid int32) int {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return len(p.ranges[tgid])
}

// detached runs after tgid detached from a device: a process attached to
// no device any more loses its pins. Callers hold no device lock.
func (p *pinTable) detached(tgid int32) {
	for _, d := range p.s.Devices {
		if d.IsAttached(tgid) {
			return
		}
	}
	p.s.mu.Lock()
	delete(p.ranges, tgid)
	p.s.mu.Unlock()
}
