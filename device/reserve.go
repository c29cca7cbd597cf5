package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Host-wide core reservation (CRWL_NC_RANGE_MARK/UNMARK): one table of
// 64 devices × 8 core slots, each entry the tgid that marked it.
const maxHostCores = 64 * maxCoreSlots

type coreReservations struct {
	owner [maxHostCores]int32
	count int
}

// mark finds the first run of n free cores in [start, end] and gives it to
// tgid. On failure it reports the longest free run seen, counted the way
// the driver counts it (its scan skips the core after each short run).
func (c *coreReservations) mark(n, start, end uint32, tgid int32, bitmap *[8]uint64) (maxRun uint32, errno syscall.Errno) {
	if start > end || start >= maxHostCores || end >= maxHostCores {
		return 0, syscall.EINVAL
	}
	for i := start; i <= end; i++ {
		if c.owner[i] != 0 {
			continue
		}
		run := uint32(1)
		j := i
		for ; j <= end && j < i+n; j++ {
			if c.owner[j] != 0 {
				break
			}
			run = j - i + 1
		}
		if run >= n {
			for j := i; j <= end && j < i+n; j++ {
				c.owner[j] = tgid
				bitmap[j/64] |= 1 << (j % 64)
				c.count++
			}
			return maxRun, 0
		}
		maxRun = max(maxRun, run)
		i = j + 1
	}
	return maxRun, syscall.EBUSY
}

// unmark frees the cores in bitmap that tgid holds.
func (c *coreReservations) unmark(bitmap *[8]uint64, tgid int32) {
	for i := 0; i < maxHostCores; i++ {
		if bitmap[i/64]&(1<<(i%64)) != 0 && c.owner[i] == tgid {
			c.owner[i] = 0
			c.count--
		}
	}
}

// shiftBitmap shifts a 512-bit little-endian bitmap by n bits (left when
// n > 0), as the kernel's bitmap_shift_left/right do.
func shiftBitmap(b *[8]uint64, n int) {
	var out [8]uint64
	for i := 0; i < maxHostCores; i++ {
		if b[i/64]&(1<<(i%64)) == 0 {
			continue
		}
		if j := i + n; j >= 0 && j < maxHostCores {
			out[j/64] |= 1 << (j % 64)
		}
	}
	*b = out
}

// rangeMapArg reads either form of the range struct, chosen by the encoded
// size: 8 (a pointer: the 24-byte struct with one bitmap word) or 80.
func rangeMapArg(r *Request) (ioctl.CRWLNCMapExt, int, Result) {
	var ext ioctl.CRWLNCMapExt
	var size int
	switch ioctl.Size(r.Cmd) {
	case 8:
		size = ioctl.Sizeof[ioctl.CRWLNCMap]()
	case uint32(ioctl.Sizeof[ioctl.CRWLNCMapExt]()):
		size = ioctl.Sizeof[ioctl.CRWLNCMapExt]()
	default:
		return ext, 0, r.markSizeErrno()
	}
	buf := ioctl.Bytes(&ext)[:size]
	if res := r.readUser(buf, r.Arg); res != 0 {
		return ext, 0, res
	}
	return ext, size, 0
}

// markSizeErrno is RANGE_MARK/UNMARK's answer to a size that is neither
// form: EINVAL, and for MARK from driver 2.29 ENXIO.
func (r *Request) markSizeErrno() Result {
	if r.Sys().quirks.MarkSizeENXIO && ioctl.Nr(r.Cmd) == ioctl.Nr(ioctl.CmdCRWLNCRangeMark) {
		return Errno(syscall.ENXIO)
	}
	return Errno(syscall.EINVAL)
}

func crwlRangeMark(r *Request) Result {
	v, size, res := rangeMapArg(r)
	if res != 0 {
		return res
	}
	s := r.Sys()
	offset := uint32(s.Arch.CoresPerDevice * r.Dev().Index)
	v.Bitmap = [8]uint64{}
	maxRun, errno := s.cores.mark(v.NCCount, v.StartNCIndex+offset, v.EndNCIndex+offset, r.Caller.Tgid, &v.Bitmap)
	v.MaxNCAvailable = maxRun
	shiftBitmap(&v.Bitmap, -int(offset))
	out := copyOutBytes(r, r.Arg, ioctl.Bytes(&v)[:size])
	if errno != 0 {
		return Errno(errno) // the struct went back all the same
	}
	return out
}

func crwlRangeUnmark(r *Request) Result {
	v, _, res := rangeMapArg(r)
	if res != 0 {
		return res
	}
	s := r.Sys()
	shiftBitmap(&v.Bitmap, s.Arch.CoresPerDevice*r.Dev().Index)
	s.cores.unmark(&v.Bitmap, r.Caller.Tgid)
	return 0
}
