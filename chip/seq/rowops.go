package seq

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/neuronfs/neuronfs/internal/halffloat"
)

// The row kernels' typed loops: a row of elements of a dtype to float32
// and back, and the common ALU ops over rows of float32. Each loop does
// exactly what the element walker's closures do to one element (dtype.go,
// tsarith.go), in the same order, so the two paths agree bit for bit.

// hostLE is whether the host stores numbers little-endian as the chip
// does: an fp32 row is then computed where it lies, without a copy, and
// bf16 rows are read and written as native 16-bit words.
var hostLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rowScratch is a kernel's rows: two inputs and an output.
type rowScratch [3][rowMax]float32

// scratch is the engine's scratch rows, made when first needed.
func (r *run) scratch() *rowScratch {
	if r.rowBuf == nil {
		r.rowBuf = new(rowScratch)
	}
	return r.rowBuf
}

// native is b as a slice of T in the host's order; nil when the host's
// byte order or b's alignment does not allow it.
func native[T float32 | uint16](b []byte) []T {
	sz := int(unsafe.Sizeof(T(0)))
	if !hostLE || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(sz) != 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

func f32view(b []byte) []float32 { return native[float32](b) }

// rowIn is the elements of dtype d in b as float32: b itself when it
// holds native fp32, else buf (as long as the row) filled.
func rowIn(d Dtype, b []byte, buf []float32) []float32 {
	switch d {
	case DtypeFP32:
		if v := f32view(b); v != nil {
			return v
		}
		for i := range buf {
			buf[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
	case DtypeBF16:
		if h := native[uint16](b); h != nil {
			h = h[:len(buf)]
			for i := range buf {
				buf[i] = halffloat.BF16ToFloat(h[i])
			}
			return buf
		}
		for i := range buf {
			buf[i] = halffloat.BF16ToFloat(le.Uint16(b[2*i:]))
		}
	default:
		load, sz := dtypes[d].load, int(dtypes[d].size)
		for i := range buf {
			buf[i] = load(b[i*sz:])
		}
	}
	return buf
}

// rowOut is where a kernel computes a row of dtype d bound for b: b
// itself (inPlace) when it holds native fp32, else buf.
func rowOut(d Dtype, b []byte, buf []float32) (z []float32, inPlace bool) {
	if d == DtypeFP32 {
		if v := f32view(b); v != nil {
			return v, true
		}
	}
	return buf, false
}

// rowStore stores x into b as dtype d through store (the dtype's own, or
// CAST's truncating one), with typed loops for fp32 and bf16.
func rowStore(d Dtype, store func([]byte, float32), b []byte, x []float32) {
	switch d {
	case DtypeFP32:
		for i, v := range x {
			le.PutUint32(b[4*i:], math.Float32bits(v))
		}
	case DtypeBF16:
		if h := native[uint16](b); h != nil {
			h = h[:len(x)]
			for i, v := range x {
				h[i] = halffloat.FloatToBF16(v)
			}
			return
		}
		for i, v := range x {
			le.PutUint16(b[2*i:], halffloat.FloatToBF16(v))
		}
	default:
		sz := int(dtypes[d].size)
		for i, v := range x {
			store(b[i*sz:], v)
		}
	}
}

// binRow is z[i] = x[i] op y[i], TENSOR_TENSOR's arithmetic (ttOp).
func binRow(op ALUOp, z, x, y []float32) {
	x, y = x[:len(z)], y[:len(z)]
	switch op {
	case ALUAdd:
		for i := range z {
			z[i] = x[i] + y[i]
		}
	case ALUSub:
		for i := range z {
			z[i] = x[i] - y[i]
		}
	case ALUMult:
		for i := range z {
			z[i] = x[i] * y[i]
		}
	case ALUMax:
		for i := range z {
			z[i] = max(x[i], y[i])
		}
	case ALUMin:
		for i := range z {
			z[i] = min(x[i], y[i])
		}
	default:
		f := ttOp(op)
		for i := range z {
			z[i] = f(x[i], y[i])
		}
	}
}

// scalarRow is z[i] = x[i] op s (s op x[i] when rev), one of
// TENSOR_SCALAR_ARITH's two steps.
func scalarRow(op ALUOp, rev bool, z, x []float32, s float32) {
	x = x[:len(z)]
	switch {
	case op == ALUBypass:
		copy(z, x)
	case op == ALUAdd && !rev:
		for i := range z {
			z[i] = x[i] + s
		}
	case op == ALUMult && !rev:
		for i := range z {
			z[i] = x[i] * s
		}
	case op == ALUSub && !rev:
		for i := range z {
			z[i] = x[i] - s
		}
	case op == ALUSub:
		for i := range z {
			z[i] = s - x[i]
		}
	case op == ALUMax && !rev:
		for i := range z {
			z[i] = max(x[i], s)
		}
	case op == ALUMin && !rev:
		for i := range z {
			z[i] = min(x[i], s)
		}
	default:
		scalarRowF(tsOps[op].f, rev, z, x, s)
	}
}

// scalarRowF is scalarRow through the op's function.
func scalarRowF(f func(a, b float32) float32, rev bool, z, x []float32, s float32) {
	if rev {
		for i := range z {
			z[i] = f(s, x[i])
		}
		return
	}
	for i := range z {
		z[i] = f(x[i], s)
	}
}
