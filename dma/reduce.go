package dma

import (
	"encoding/binary"
	"unsafe"
)

// Reductions in the engine. A TX descriptor's meta_ctrl can make the SDMA
// engine compute while it copies: the known op words are add/min-max
// 0x2000000, fma 0x2100000, CCE-ext 0x2400000 and gradient 0x2500000
// (bits 25:20); the meaning of the bits below is not public. neuronfs
// pins this convention, every part of it a guess [GUESS]:
//
//   - class (bits 25:20) 0x20 is a reduction; its CCE type sits in bits
//     17:16 (the SDMA_CCETYPE numbering: ADD 0, MAX 2, MIN 3) and its
//     element type in bits 12:8 (the instruction-set dtype numbering);
//   - a reduction combines into the destination: dst = op(dst, src),
//     element by element (what a ring reduce-scatter step needs);
//   - FMA (type 1, or class 0x21), EXT and gradient are not emulated and,
//     like an unknown element type, copy as the default op does.
const (
	metaClassShift   = 20
	metaClassMask    = 0x3f << metaClassShift
	metaClassReduce  = 0x20
	metaCCEShift     = 16
	metaCCEMask      = 3 << metaCCEShift
	metaDtypeShift   = 8
	metaDtypeMask    = 0x1f << metaDtypeShift
	metaFirstAndLast = 3 // first and last block, as in MetaDefault
)

// CCE types (SDMA_CCETYPE).
const (
	CCEAdd = 0
	CCEMax = 2
	CCEMin = 3
)

// Element types (the instruction-set dtype enum) a reduction handles.
const (
	DtypeInt8   = 2
	DtypeUint8  = 3
	DtypeInt16  = 4
	DtypeUint16 = 5
	DtypeBF16   = 6
	DtypeFP16   = 7
	DtypeInt32  = 8
	DtypeUint32 = 9
	DtypeFP32   = 10
)

// ReduceMeta is the meta_ctrl word of a TX descriptor that reduces with
// cce over elements of dtype.
func ReduceMeta(cce, dtype uint32) uint32 {
	return metaClassReduce<<metaClassShift | cce<<metaCCEShift&metaCCEMask | dtype<<metaDtypeShift&metaDtypeMask | metaFirstAndLast
}

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
	if meta&metaClassMask>>metaClassShift != metaClassReduce {
		return nil
	}
	t, ok := elementTypes[meta&metaDtypeMask>>metaDtypeShift]
	if !ok {
		return nil
	}
	return t[meta&metaCCEMask>>metaCCEShift]
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
	DtypeFP32:   native[float32](),
	DtypeBF16:   floatOps(2, func(b []byte) float32 { return bf16ToFloat(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, floatToBF16(v)) }),
	DtypeFP16:   floatOps(2, func(b []byte) float32 { return fp16ToFloat(le.Uint16(b)) }, func(b []byte, v float32) { le.PutUint16(b, floatToFP16(v)) }),
	DtypeInt32:  native[int32](),
	DtypeUint32: native[uint32](),
	DtypeInt16:  native[int16](),
	DtypeUint16: native[uint16](),
	DtypeInt8:   native[int8](),
	DtypeUint8:  native[uint8](),
}

var le = binary.LittleEndian

// floatOps computes in float32 and rounds once to the element type.
func floatOps(size int, load func([]byte) float32, store func([]byte, float32)) [4]*reducer {
	op := func(f func(a, b float32) float32) *reducer {
		return &reducer{size: size, apply: func(d, s []byte) { store(d, f(load(d), load(s))) }}
	}
	return [4]*reducer{
		CCEAdd: op(func(a, b float32) float32 { return a + b }),
		CCEMax: op(func(a, b float32) float32 { return max(a, b) }),
		CCEMin: op(func(a, b float32) float32 { return min(a, b) }),
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
		CCEAdd: op(func(a, b T) T { return a + b }, func(d, s []T) {
			for i := range d {
				d[i] += s[i]
			}
		}),
		CCEMax: op(func(a, b T) T { return max(a, b) }, func(d, s []T) {
			for i := range d {
				d[i] = max(d[i], s[i])
			}
		}),
		CCEMin: op(func(a, b T) T { return min(a, b) }, func(d, s []T) {
			for i := range d {
				d[i] = min(d[i], s[i])
			}
		}),
	}
}
