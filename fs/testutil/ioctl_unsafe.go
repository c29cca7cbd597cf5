package testutil

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ioctl issues cmd on fd with a pointer to arg and returns ioctl()'s
// result and errno.
func Ioctl[T any](fd int, cmd uint32, arg *T) (int, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(unsafe.Pointer(arg)))
	return int(r), e
}

// IoctlAddr issues cmd with a raw argument value (for bad-pointer tests).
func IoctlAddr(fd int, cmd uint32, arg uintptr) (int, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), arg)
	return int(r), e
}

// addrOf returns the address of a slice's first byte.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// AddrOf is addrOf for other packages' tests.
func AddrOf(b []byte) uintptr { return addrOf(b) }

// OffHeap returns anonymous memory outside the Go heap: its address stays
// valid while a struct holds it as a plain integer. Free it with
// unix.Munmap.
func OffHeap(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// ptr returns a pointer to b's first byte (for overlaying a struct).
func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// ReadvSelf copies src into dst with process_vm_readv on this process:
// the floor that copies between processes are measured against.
func ReadvSelf(dst, src []byte) error {
	local := []unix.Iovec{{Base: &dst[0], Len: uint64(len(dst))}}
	remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: len(src)}}
	n, err := unix.ProcessVMReadv(unix.Getpid(), local, remote, 0)
	if err == nil && n != len(src) {
		err = unix.EFAULT
	}
	return err
}
