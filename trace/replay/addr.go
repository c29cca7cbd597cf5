package replay

import (
	"fmt"
	"sort"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// addrMap translates the physical addresses of a recording (chunk PAs,
// mmap offsets, DMA descriptor addresses) into this replay's, with
// Options.MapAddresses. A capture from real hardware, or from a host where
// other processes allocated first, has other addresses than this replay
// gets: every address an output reveals joins the map, covering the size
// the same struct reports (a page when it reports none), and replaces
// whatever the map held there (the recording may have freed and reused
// it). Addresses the map does not cover are passed as recorded; without
// address mapping nothing is ever learned, so every translation is the
// identity.
type addrMap struct {
	ranges []addrRange // by old
}

type addrRange struct{ old, new, size uint64 }

const defaultAddrSpan = 4096

func (m *addrMap) find(a uint64) (addrRange, bool) {
	i := sort.Search(len(m.ranges), func(i int) bool { return m.ranges[i].old > a })
	if i > 0 && a-m.ranges[i-1].old < m.ranges[i-1].size {
		return m.ranges[i-1], true
	}
	return addrRange{}, false
}

// translate returns what recorded address a is in this replay.
func (m *addrMap) translate(a uint64) uint64 {
	if r, ok := m.find(a); ok {
		return r.new + (a - r.old)
	}
	return a
}

// learn records that [old, old+size) is at new here, replacing whatever
// overlapped it.
func (m *addrMap) learn(old, new, size uint64) {
	if old == 0 || new == 0 {
		return
	}
	size = max(size, 1)
	kept := m.ranges[:0]
	for _, r := range m.ranges {
		if r.old+r.size <= old || r.old >= old+size {
			kept = append(kept, r)
		}
	}
	m.ranges = kept
	if old == new {
		return // the identity: nothing to translate
	}
	i := sort.Search(len(m.ranges), func(i int) bool { return m.ranges[i].old > old })
	m.ranges = append(m.ranges, addrRange{})
	copy(m.ranges[i+1:], m.ranges[i:])
	m.ranges[i] = addrRange{old, new, size}
}

// extentOf returns the recorded bytes a struct's address member covers
// (its extent member), or 0.
func extentOf(st abi.Struct, after []byte) uint64 {
	for _, f := range st.Fields {
		if f.Role == ioctl.RoleExtent {
			v, _ := abi.Uint(after, f)
			return v
		}
	}
	return 0
}

// compareAddress checks an address member. Without address mapping it
// must be what was recorded. With it, an input the call left alone must be
// its translation, and an output is learned.
func (s *state) compareAddress(res *Result, name string, oldBefore, oldAfter, newAfter, size uint64) {
	if !s.mapAddrs {
		if oldAfter != newAfter {
			res.Diffs = append(res.Diffs, fmt.Sprintf("%s: recorded %#x, got %#x", name, oldAfter, newAfter))
		}
		return
	}
	want := s.Addrs.translate(oldAfter)
	switch {
	case want == newAfter:
		if want != oldAfter {
			s.rewrote(res, fmt.Sprintf("%s (address: recorded %#x is %#x here)", name, oldAfter, newAfter))
		}
	case oldAfter == oldBefore || newAfter == 0:
		// An input the call should have left as translated, or nothing
		// came back where the recording had an address.
		res.Diffs = append(res.Diffs, fmt.Sprintf("%s: recorded %#x (replayed as %#x), got %#x", name, oldAfter, want, newAfter))
	default:
		s.Addrs.learn(oldAfter, newAfter, max(size, defaultAddrSpan))
		s.rewrote(res, fmt.Sprintf("%s (new address: recorded %#x is %#x here)", name, oldAfter, newAfter))
	}
}

// translateDescriptors rewrites the addresses of a buffer of recorded
// DMA descriptors.
func (s *state) translateDescriptors(b []byte) {
	for off := 0; off+dmadesc.Size <= len(b); off += dmadesc.Size {
		d := dmadesc.Decode(b[off:])
		if a := s.Addrs.translate(d.Addr); a != d.Addr {
			d.Addr = a
			d.Put(b[off:])
		}
	}
}

// translateTarget rewrites a pointed-to buffer recorded elsewhere into
// what it means here, by what the description says it holds.
func (s *state) translateTarget(t ioctl.Target, b []byte) {
	switch t {
	case ioctl.TargetDescriptors:
		s.translateDescriptors(b)
	case ioctl.TargetBARAddress:
		s.translateBARs(b)
	}
}
