package dma

import (
	"encoding/binary"
	"unsafe"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/internal/halffloat"
)

// reducer is what a step does with its bytes instead of copying them.
type reducer struct {
	size  int // bytes per element
	apply func(dst, src []byte)
	// bulk, if set, reduces whole aligned slices of native elements at
	// once; it reports false (and does nothing) for unaligned ones.
	bulk func(dst, src []byte) bool
}

// reductionOf decodes a TX meta_ctrl word; nil means a copy.
func reductionOf(meta uint32) *reducer {
	cce, dtype, ok := dmadesc.ReduceOf(meta)
	if !ok {
		return nil
	}
	t, ok := elementTypes[dtype]
	if !ok {
		return nil
	}
	return t[cce]
}

// combine reduces src into dst; a trailing partial element is left alone.
func (r *reducer) combine(dst, src []byte) {
	n := len(src) / r.size * r.size
	if r.bulk != nil && r.bulk(dst[:n], src[:n]) {
		return
	}
	for i := 0; i < n; i += r.size {
		r.apply(dst[i:i+r.size], src[i:i+r.size])
	}
}

// elementTypes: per dtype, the reducer of each CCE type (nil: copy).
var elementTypes = map[uint32][4]*reducer{
	dmadesc.DtypeFP32:   native[float32](),
	dmadesc.DtypeBF16:   floatOps(2, func(b []byte) float32 { return halffloat.BF16ToFloat(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, halffloat.FloatToBF16(v)) }),
	dmadesc.DtypeFP16:   floatOps(2, func(b []byte) float32 { return halffloat.FP16ToFloat(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, halffloat.FloatToFP16(v)) }),
	dmadesc.DtypeInt32:  native[int32](),
	dmadesc.DtypeUint32: native[uint32](),
	dmadesc.DtypeInt16:  native[int16](),
	dmadesc.DtypeUint16: native[uint16](),
	dmadesc.DtypeInt8:   native[int8](),
	dmadesc.DtypeUint8:  native[uint8](),
}

var le = binary.LittleEndian

// floatOps computes in float32 and rounds once to the element type.
func floatOps(size int, load func([]byte) float32, store func([]byte, float32)) [4]*reducer {
	op := func(f func(a, b float32) float32) *reducer {
		return &reducer{size: size, apply: func(d, s []byte) { store(d, f(load(d), load(s))) }}
	}
	return [4]*reducer{
		dmadesc.CCEAdd: op(func(a, b float32) float32 { return a + b }),
		dmadesc.CCEMax: op(func(a, b float32) float32 { return max(a, b) }),
		dmadesc.CCEMin: op(func(a, b float32) float32 { return min(a, b) }),
	}
}

// element is a type the host computes in natively (little-endian, as the
// device's memory). Integers wrap around on overflow [GUESS: saturation
// is as likely].
type element interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | float32
}

func native[T element]() [4]*reducer {
	op := func(f func(a, b T) T, loop func(d, s []T)) *reducer {
		size := int(unsafe.Sizeof(T(0)))
		elems := func(b []byte) ([]T, bool) {
			if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) != 0 {
				return nil, false
			}
			return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size), true
		}
		return &reducer{
			size: size,
			apply: func(d, s []byte) {
				var a, b T
				copy(unsafe.Slice((*byte)(unsafe.Pointer(&a)), size), d)
				copy(unsafe.Slice((*byte)(unsafe.Pointer(&b)), size), s)
				a = f(a, b)
				copy(d, unsafe.Slice((*byte)(unsafe.Pointer(&a)), size))
			},
			bulk: func(d, s []byte) bool {
				dv, ok1 := elems(d)
				sv, ok2 := elems(s)
				if ok1 && ok2 {
					loop(dv, sv)
				}
				return ok1 && ok2
			},
		}
	}
	// The loops are written out so the compiler inlines the operation.
	return [4]*reducer{
		dmadesc.CCEAdd: op(func(a, b T) T { return a + b }, func(d, s []T) {
			for i := range d {
				d[i] += s[i]
			}
		}),
		dmadesc.CCEMax: op(func(a, b T) T { return max(a, b) }, func(d, s []T) {
			for i := range d {
				d[i] = max(d[i], s[i])
			}
		}),
		dmadesc.CCEMin: op(func(a, b T) T { return min(a, b) }, func(d, s []T) {
			for i := range d {
				d[i] = min(d[i], s[i])
			}
		}),
	}
}
