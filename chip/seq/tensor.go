package seq

import "fmt"

// Tensor3D is a TENSOR3D operand: where a 3-D strided pattern starts and
// how it steps, in elements of the operand's dtype, dim 0 innermost. The
// partition axis is not here: the record's channel count runs the same
// pattern on consecutive partitions (docs/isa.md).
type Tensor3D struct {
	Start uint32 // the ADDR4 word: an ISA address, or a register (RegAddr)
	Step  [3]int16
	Num   [3]uint16
}

// RegAddr is the ADDR4 word naming register reg as the address.
func RegAddr(reg uint8) uint32 { return addrRegMarker<<24 | uint32(reg) }

// The ADDR4 forms by the top byte (the marker): bit 7 alone is the
// register form, bit 5 the indirect (gather) form, bit 6 a dynamic
// pattern set up elsewhere.
const (
	addrRegMarker    = 0x80
	addrModeMask     = 0xE0
	numAddrRegisters = 64
)

func (r *Record) tensor3D(off int) Tensor3D {
	t := Tensor3D{Start: r.u32(off)}
	for i := range 3 {
		t.Step[i] = int16(le.Uint16(r[off+offT3Step+2*i:]))
		t.Num[i] = le.Uint16(r[off+offT3Num+2*i:])
	}
	return t
}

func (r *Record) putTensor3D(off int, t Tensor3D) {
	r.put32(off, t.Start)
	for i := range 3 {
		le.PutUint16(r[off+offT3Step+2*i:], uint16(t.Step[i]))
		le.PutUint16(r[off+offT3Num+2*i:], t.Num[i])
	}
}

// elems is how many elements one partition's pattern holds.
func (t Tensor3D) elems() int64 {
	return int64(t.Num[0]) * int64(t.Num[1]) * int64(t.Num[2])
}

// t4 is t as the 4-D pattern with a last dimension of one element: the
// walkers below serve both shapes.
func (t Tensor3D) t4() Tensor4D {
	return Tensor4D{Start: t.Start, Step: [4]int16{t.Step[0], t.Step[1], t.Step[2], 0}, Num: [4]uint16{t.Num[0], t.Num[1], t.Num[2], 1}}
}

// Tensor4D is a TENSOR4D operand (20 bytes: ADDR4, int16 step[4],
// uint16 num[4]; 59979245665): a Tensor3D with a fourth dimension.
type Tensor4D struct {
	Start uint32
	Step  [4]int16
	Num   [4]uint16
}

func (r *Record) tensor4D(off int) Tensor4D {
	t := Tensor4D{Start: r.u32(off)}
	for i := range 4 {
		t.Step[i] = int16(le.Uint16(r[off+offT4Step+2*i:]))
		t.Num[i] = le.Uint16(r[off+offT4Num+2*i:])
	}
	return t
}

func (r *Record) putTensor4D(off int, t Tensor4D) {
	r.put32(off, t.Start)
	for i := range 4 {
		le.PutUint16(r[off+offT4Step+2*i:], uint16(t.Step[i]))
		le.PutUint16(r[off+offT4Num+2*i:], t.Num[i])
	}
}

// elems is how many elements one partition's pattern holds: up to
// (2^16−1)^4, which fits a uint64 but not an int64.
func (t Tensor4D) elems() uint64 {
	return uint64(t.Num[0]) * uint64(t.Num[1]) * uint64(t.Num[2]) * uint64(t.Num[3])
}

func (t Tensor4D) String() string {
	return fmt.Sprintf("%#x steps %v nums %v", t.Start, t.Step, t.Num)
}

// span is the lowest and highest element the pattern reaches, relative
// to its start: every corner of the box is reached, so the check of
// these two is the check of every element.
func (t Tensor4D) span() (lo, hi int64) {
	for i := range 4 {
		d := int64(t.Step[i]) * (int64(t.Num[i]) - 1)
		if d < 0 {
			lo += d
		} else {
			hi += d
		}
	}
	return lo, hi
}

func (t Tensor3D) String() string {
	return fmt.Sprintf("%#x steps %v nums %v", t.Start, t.Step, t.Num)
}

// place is an operand resolved against the on-chip memory: the region
// and first partition it names, its start's byte offset there, and the
// bytes [lo, hi) of each partition its pattern reaches.
type place struct {
	g      Region
	p0     int
	off    uint32
	size   uint32 // bytes per element
	lo, hi uint32
}

// part is partition p0+p's bytes the operand reaches, from pl.lo.
func (pl place) part(mem OnChip, p int, write bool) ([]byte, error) {
	return mem.Partition(pl.g, pl.p0+p, pl.lo, pl.hi, write)
}

// resolveAddr is the ISA address an ADDR4 word names; emulated is false
// for the forms this package does not follow (indirect, dynamic).
func (r *run) resolveAddr(w uint32) (a uint32, emulated bool, err error) {
	switch marker := w >> 24; {
	case marker&addrModeMask == 0:
		return w, true, nil
	case marker == addrRegMarker && w&0x00FFFF00 == 0 && w&0xFF < numAddrRegisters:
		v := r.regs[w&0xFF]
		if v > AddrMask {
			return 0, true, fmt.Errorf("%w: register %d holds %#x", ErrAperture, w&0xFF, v)
		}
		return v, true, nil
	case marker&0xA0 == addrRegMarker:
		return 0, true, fmt.Errorf("%w: register address %#x", ErrOperand, w)
	}
	return 0, false, nil
}

// placeTensor checks that t, of elements of d on n partitions, lies
// whole inside the active bytes of consecutive partitions of one region
// and is aligned to its dtype, as the validators demand of an immediate
// address (and the hardware of a register one).
func (r *run) placeTensor(t Tensor4D, d Dtype, n int, mem OnChip) (pl place, emulated bool, err error) {
	a, emulated, err := r.resolveAddr(t.Start)
	if err != nil || !emulated {
		return pl, emulated, err
	}
	in, _ := d.info()
	g, p0, off, ok := Locate(a)
	switch {
	case !ok:
		return pl, true, fmt.Errorf("%w: %#x", ErrAperture, a)
	case a%in.size != 0:
		return pl, true, fmt.Errorf("%w: %#x not aligned to %v", ErrOperand, a, d)
	case p0+n > Partitions:
		return pl, true, fmt.Errorf("%w: %v partitions %d..%d", ErrAperture, g, p0, p0+n-1)
	}
	for _, k := range t.Num {
		if k == 0 {
			return pl, true, fmt.Errorf("%w: a count of 0 in %v", ErrOperand, t)
		}
	}
	lo, hi := t.span()
	sz, active := int64(in.size), int64(mem.Active(g))
	first, end := int64(off)+lo*sz, int64(off)+(hi+1)*sz
	if first < 0 || end > active {
		return pl, true, fmt.Errorf("%w: %v pattern %v reaches bytes %d..%d of a %d-byte partition", ErrAperture, g, t, first, end-1, active)
	}
	return place{g: g, p0: p0, off: off, size: in.size, lo: uint32(first), hi: uint32(end)}, true, nil
}

// cursor walks a pattern's elements in order, dim 0 fastest, as byte
// offsets inside the bytes place.part returns.
type cursor struct {
	t   Tensor4D
	sz  int64
	k   [4]uint16
	off int64
}

func newCursor(t Tensor4D, pl place) cursor {
	return cursor{t: t, sz: int64(pl.size), off: int64(pl.off) - int64(pl.lo)}
}

// next moves to the following element.
func (c *cursor) next() {
	for i := range 4 {
		c.off += int64(c.t.Step[i]) * c.sz
		if c.k[i]++; c.k[i] < c.t.Num[i] {
			return
		}
		c.off -= int64(c.t.Step[i]) * c.sz * int64(c.t.Num[i])
		c.k[i] = 0
	}
}
