package ioctl

import "unsafe"

// Decode copies the first sizeof(T) bytes of b into a T. It reports false
// when b is too short. T must be one of this package's C-layout structs (or
// a fixed-size scalar): plain data with no pointers.
func Decode[T any](b []byte) (T, bool) {
	var v T
	n := int(unsafe.Sizeof(v))
	if len(b) < n {
		return v, false
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), n), b)
	return v, true
}

// Bytes returns the memory of *v as a byte slice aliasing v.
func Bytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// Sizeof returns sizeof(T).
func Sizeof[T any]() int {
	var v T
	return int(unsafe.Sizeof(v))
}
