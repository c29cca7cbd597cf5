package replay

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// callerBuffer hands out a caller buffer outside the Go heap, so its
// address stays valid while the driver (or an async copy) uses it. A
// worker's buffers go when it exits.
func callerBuffer(n int) ([]byte, uint64, error) {
	if n <= 0 {
		n = 1
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, 0, err
	}
	return b, uint64(uintptr(unsafe.Pointer(&b[0]))), nil
}

func sysIoctl(fd int, cmd uint32, arg uint64) (int64, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	return int64(r), e
}

func sysMmap(length, prot, flags uint64, fd int, offset uint64) (uint64, unix.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_MMAP, 0, uintptr(length), uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset))
	return uint64(r), e
}

func sysMunmap(addr, length uint64) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(addr), uintptr(length), 0)
	return e
}
