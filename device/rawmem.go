package device

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/dhal"
)

// Raw memory is what a device's backing holds where the driver has
// nothing: outside every chunk, special resource and PROGRAM_ENGINE
// region. A mapping of such a range (which the driver allows to
// CAP_SYS_RAWIO only, and a plain mount cannot check: FUSE never sees the
// mmap) or a DMA descriptor naming such an address puts it there, and
// nothing would ever free it: on memfd it is host RAM for good, and it
// counts against the memory limit every other process's writes meet.
// The daemon reaps it (fs, rawreap.go): it punches raw memory that no
// mapping of a process holding CAP_SYS_RAWIO covers. Punched memory reads
// as zeros, also in a channel scrubbed with a pattern.

// RawRange is [Start, End) of a device's physical addresses.
type RawRange = mempool.Range

// RawHeld reports how many bytes of raw memory d's backing holds. Only a
// memfd backing is reaped (a file's pages are the kernel's to reclaim);
// on a file it reports 0.
func (d *Device) RawHeld() uint64 { return d.reapRaw(nil, false) }

// ReapRaw punches d's raw memory outside keep and reports the bytes it
// punched. No chunk is handed out while it runs.
func (d *Device) ReapRaw(keep []RawRange) uint64 { return d.reapRaw(keep, true) }

func (d *Device) reapRaw(keep []RawRange, punch bool) (n uint64) {
	if d.sys.backing.Dir != "" {
		return 0
	}
	fd, span := d.chip.PhysFd(), d.sys.Arch.PhysicalSpan()
	walk := func(chunks []RawRange) {
		covered := slices.Concat(chunks, keep, d.fixedRanges())
		forEachGap(covered, span, func(lo, hi uint64) {
			forEachData(fd, lo, hi, func(lo, hi uint64) {
				n += hi - lo
				if punch {
					d.chip.Punch(lo, hi-lo)
				}
			})
		})
	}
	if punch {
		// Under the pool's lock: no range is handed out and written
		// between finding it raw and punching it.
		d.mem.pool.Allocated(walk)
		return n
	}
	var chunks []RawRange
	d.mem.pool.Allocated(func(rs []RawRange) { chunks = rs })
	walk(chunks)
	return n
}

// fixedRanges are the special resources and PROGRAM_ENGINE regions
// outside HBM and host memory: the chip's own state, never raw. Inside
// HBM and host memory they are views of it (V3 on map the whole HBM
// read-only), whose memory is chunks or raw like any other.
func (d *Device) fixedRanges() []RawRange {
	f := d.sys.Arch
	var rs, pools []RawRange
	for _, r := range f.MmapResources() {
		rs = append(rs, RawRange{Start: r.Offset, End: r.Offset + r.Size})
	}
	for _, r := range f.ProgramRegions() {
		rs = append(rs, RawRange{Start: r.Base, End: r.Base + r.Size})
	}
	for _, b := range f.HBMBases {
		pools = append(pools, RawRange{Start: b, End: b + f.HBMSize})
	}
	pools = append(pools, RawRange{Start: f.HostBase, End: f.HostBase + dhal.HostMemorySpan})
	var out []RawRange
	for _, r := range rs {
		forEachGap(pools, r.End, func(lo, hi uint64) {
			if lo = max(lo, r.Start); lo < hi {
				out = append(out, RawRange{Start: lo, End: hi})
			}
		})
	}
	return out
}

// forEachGap calls fn for every maximal range of [0, span) that no range
// of covered overlaps, in order.
func forEachGap(covered []RawRange, span uint64, fn func(lo, hi uint64)) {
	covered = slices.Clone(covered)
	slices.SortFunc(covered, func(a, b RawRange) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	var at uint64
	for _, r := range covered {
		if r.Start > at {
			fn(at, min(r.Start, span))
		}
		at = max(at, r.End)
		if at >= span {
			return
		}
	}
	if at < span {
		fn(at, span)
	}
}

// forEachData calls fn for every range of [lo, hi) the file fd holds data
// in (SEEK_DATA, SEEK_HOLE), in order.
func forEachData(fd int, lo, hi uint64, fn func(lo, hi uint64)) {
	for lo < hi {
		start, err := unix.Seek(fd, int64(lo), unix.SEEK_DATA)
		if err != nil || uint64(start) >= hi { // ENXIO: no data past lo
			return
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return
		}
		fn(uint64(start), min(uint64(end), hi))
		lo = uint64(end)
	}
}
