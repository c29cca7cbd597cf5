// Package ia32 makes system calls through the 32-bit x86 entry (int
// $0x80) from a 64-bit process, so tests can check that a seccomp filter
// stops what a 32-bit call would do behind its back: the kernel reports
// such a call as AUDIT_ARCH_I386, with the i386 numbers.
package ia32

import "golang.org/x/sys/unix"

// i386 system call numbers.
const (
	SysGetpid    = 20
	SysFtruncate = 93
)

// Syscall makes the i386 call nr with up to three arguments (truncated
// to 32 bits: no pointers above 4 GiB) and returns its result, or its
// errno. On a kernel without IA32 emulation the process dies of
// SIGSEGV: make the call in a process of its own first to find out.
func Syscall(nr, a1, a2, a3 uintptr) (uintptr, unix.Errno) {
	r := int80(nr, a1, a2, a3)
	if r32 := int32(r); r32 < 0 && r32 > -4096 {
		return 0, unix.Errno(-r32)
	}
	return uintptr(uint32(r)), 0
}
