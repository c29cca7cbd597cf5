//go:build !amd64

package ia32

import "golang.org/x/sys/unix"

// int80 has no 32-bit x86 entry to reach off x86_64.
func int80(nr, a1, a2, a3 uintptr) uintptr {
	enosys := int(unix.ENOSYS) // a variable: -ENOSYS as a constant overflows uintptr
	return uintptr(-enosys)
}
