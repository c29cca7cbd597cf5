package runtime

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysIoctl passes a pointer to arg, which stays pinned for the call.
func sysIoctl[T any](fd int, cmd uint32, arg *T) (int, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(unsafe.Pointer(arg)))
	return int(r), e
}
