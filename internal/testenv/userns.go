package testenv

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RefuseUserns installs the rule of container seccomp profiles (Docker's
// default): clone and unshare with CLONE_NEWUSER fail with EPERM, clone3
// (whose flags BPF cannot read) with ENOSYS. The caller has
// no_new_privs set for it.
func RefuseUserns() error {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	prog := []unix.SockFilter{
		{Code: ld, K: 0}, // nr
		{Code: jeq, K: unix.SYS_CLONE3, Jt: 4},
		{Code: jeq, K: unix.SYS_CLONE, Jt: 1},
		{Code: jeq, K: unix.SYS_UNSHARE, Jf: 4},
		{Code: ld, K: 16}, // args[0], low half
		{Code: jset, K: unix.CLONE_NEWUSER, Jt: 1, Jf: 2},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
