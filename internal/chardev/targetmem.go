package chardev

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reads of a filtered task's memory.

// readPath reads a NUL-terminated path from the target into buf, page by
// page so a short mapping does not fail the read. A path longer than buf
// (PATH_MAX is longer than a page) is read into a fresh buffer.
func readPath(pid uint32, addr uint64, buf []byte) ([]byte, error) {
	var out []byte
	for len(out) < unix.PathMax {
		chunk := buf[:4096-int(addr%4096)]
		k, err := readMem(pid, addr, chunk)
		if k == 0 {
			if err == nil {
				err = unix.EFAULT
			}
			return nil, err
		}
		if i := bytes.IndexByte(chunk[:k], 0); i >= 0 {
			if out == nil {
				return chunk[:i], nil
			}
			return append(out, chunk[:i]...), nil
		}
		out = append(out, chunk[:k]...)
		addr += uint64(k)
	}
	return nil, unix.ENAMETOOLONG
}

// readMem reads the target's memory at addr into p: the bytes read, 0
// on a failure (the call's -1 never reaches a slice bound).
func readMem(pid uint32, addr uint64, p []byte) (int, error) {
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(int(pid), local, remote, 0)
	return max(n, 0), err
}

func readStruct[T any](pid uint32, addr uint64, v *T) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
	n, err := readMem(pid, addr, b)
	if err == nil && n < len(b) {
		err = unix.EFAULT
	}
	return err
}
