// Package chardev makes /dev/neuronN look like the character devices they
// are on a real host, inside `neuronfs run`: the nodes are real character
// nodes (whose open would fail, no kernel driver owns their major), and a
// seccomp user-notification filter hands every open of them to the daemon,
// which opens the FUSE node for the caller and installs the descriptor in
// it; fstat of such a descriptor reports the character node.
package chardev

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BPF opcodes (classic BPF, as seccomp takes it).
const (
	bpfLdW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K

	auditArchX8664 = 0xc000003e

	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
}

// argLow loads the low 32 bits of syscall argument i.
func argLow(i int) unix.SockFilter { return stmt(bpfLdW, uint32(offArgs+8*i)) }

// filter sends opens, fstat, the empty-path forms of newfstatat and
// statx, mmaps of a file and mremaps to the listener, and allows
// everything else. Classic BPF only jumps forward, so each test has its
// own returns.
func filter() []unix.SockFilter {
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		notify = unix.SECCOMP_RET_USER_NOTIF
	)
	prog := []unix.SockFilter{
		/* 0 */ stmt(bpfLdW, offArch),
		/* 1 */ jump(bpfJeq, auditArchX8664, 1, 0),
		/* 2 */ stmt(bpfRet, allow),
		/* 3 */ stmt(bpfLdW, offNr),
		/* 4 */ jump(bpfJeq, unix.SYS_OPEN, 10, 0),
		/* 5 */ jump(bpfJeq, unix.SYS_OPENAT, 9, 0),
		/* 6 */ jump(bpfJeq, unix.SYS_OPENAT2, 8, 0),
		/* 7 */ jump(bpfJeq, unix.SYS_FSTAT, 7, 0),
		/* 8 */ jump(bpfJeq, unix.SYS_NEWFSTATAT, 8, 0),
		/* 9 */ jump(bpfJeq, unix.SYS_STATX, 3, 0),
		/* 10 */ jump(bpfJeq, unix.SYS_MMAP, 10, 0),
		/* 11 */ jump(bpfJeq, unix.SYS_MREMAP, 3, 0),
		/* 12 */ stmt(bpfRet, allow),
		/* 13 statx */ argLow(2),
		/* 14 */ jump(bpfJset, unix.AT_EMPTY_PATH, 0, 1),
		/* 15 notify */ stmt(bpfRet, notify),
		/* 16 */ stmt(bpfRet, allow),
		/* 17 newfstatat */ argLow(3),
		/* 18 */ jump(bpfJset, unix.AT_EMPTY_PATH, 0, 1),
		/* 19 */ stmt(bpfRet, notify),
		/* 20 */ stmt(bpfRet, allow),
		/* 21 mmap */ argLow(3),
		/* 22 */ jump(bpfJset, unix.MAP_ANONYMOUS, 3, 0),
		/* 23 */ argLow(4),
		/* 24 */ jump(bpfJeq, 0xffffffff, 1, 0),
		/* 25 */ stmt(bpfRet, notify),
		/* 26 */ stmt(bpfRet, allow),
	}
	return prog
}

// InstallFilter installs the filter on the calling thread (which must stay
// locked to its goroutine until it execs) and returns the listener fd.
// The caller must have CAP_SYS_ADMIN or no_new_privs set.
func InstallFilter() (int, error) {
	prog := filter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("seccomp: %w", errno)
	}
	return int(fd), nil
}
