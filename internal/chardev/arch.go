package chardev

import "runtime"

// sysCall names a system call that a filter traps or the supervisor
// serves. Its number is the architecture's (sysArch); the argument
// positions of a call are the same on every architecture (pathCalls,
// refusals, handle).
type sysCall int

// The calls, in no particular order.
const (
	sysOpen sysCall = iota
	sysOpenat
	sysOpenat2
	sysStat
	sysLstat
	sysFstat
	sysNewfstatat
	sysStatx
	sysAccess
	sysFaccessat
	sysFaccessat2
	sysReadlink
	sysReadlinkat
	sysGetxattr
	sysLgetxattr
	sysListxattr
	sysLlistxattr
	sysMmap
	sysMremap
	sysDup
	sysDup2
	sysDup3
	sysFcntl
	sysIoctl
	sysClose
	sysCloseRange
	sysExecve
	sysExecveat
	sysTruncate
	sysFtruncate
	sysFallocate
	sysRead
	sysReadv
	sysPread64
	sysPreadv
	sysPreadv2
	sysWrite
	sysWritev
	sysPwrite64
	sysPwritev
	sysPwritev2
	sysLseek
	sysSendfile
	sysSplice
	sysTee
	sysCopyFileRange
	numSysCalls
)

// sysNames are the calls' names as the kernel's syscall tables spell
// them (x/sys/unix's SYS_ constants, upper-cased): the table test
// checks each architecture's numbers against them.
var sysNames = [numSysCalls]string{
	sysOpen: "open", sysOpenat: "openat", sysOpenat2: "openat2",
	sysStat: "stat", sysLstat: "lstat", sysFstat: "fstat",
	sysNewfstatat: "newfstatat", sysStatx: "statx",
	sysAccess: "access", sysFaccessat: "faccessat", sysFaccessat2: "faccessat2",
	sysReadlink: "readlink", sysReadlinkat: "readlinkat",
	sysGetxattr: "getxattr", sysLgetxattr: "lgetxattr",
	sysListxattr: "listxattr", sysLlistxattr: "llistxattr",
	sysMmap: "mmap", sysMremap: "mremap",
	sysDup: "dup", sysDup2: "dup2", sysDup3: "dup3", sysFcntl: "fcntl",
	sysIoctl: "ioctl", sysClose: "close", sysCloseRange: "close_range",
	sysExecve: "execve", sysExecveat: "execveat",
	sysTruncate: "truncate", sysFtruncate: "ftruncate", sysFallocate: "fallocate",
	sysRead: "read", sysReadv: "readv", sysPread64: "pread64",
	sysPreadv: "preadv", sysPreadv2: "preadv2",
	sysWrite: "write", sysWritev: "writev", sysPwrite64: "pwrite64",
	sysPwritev: "pwritev", sysPwritev2: "pwritev2",
	sysLseek: "lseek", sysSendfile: "sendfile", sysSplice: "splice",
	sysTee: "tee", sysCopyFileRange: "copy_file_range",
}

// sysArch is one architecture's side of the filters: its audit
// architecture, the numbers of the calls (a call it lacks is absent) and
// the open flag bits that differ between architectures.
type sysArch struct {
	goarch string
	audit  uint32 // AUDIT_ARCH_* that seccomp_data.arch holds
	// x32: calls with x32SyscallBit set are another ABI (x86_64's x32),
	// whose numbers mean other calls.
	x32 bool
	// oDirectory is O_DIRECTORY (0x10000 on x86_64, 0x4000 on arm64).
	oDirectory uint32
	nrs        map[sysCall]int
	byNr       map[int32]sysCall
}

// newSysArch makes an architecture's table and its reverse index.
func newSysArch(a sysArch) *sysArch {
	a.byNr = make(map[int32]sysCall, len(a.nrs))
	for c, nr := range a.nrs {
		a.byNr[int32(nr)] = c
	}
	return &a
}

// nr is call c's number, if the architecture has it.
func (a *sysArch) nr(c sysCall) (int, bool) {
	nr, ok := a.nrs[c]
	return nr, ok
}

// call is the call of number nr, or -1.
func (a *sysArch) call(nr int32) sysCall {
	if c, ok := a.byNr[nr]; ok {
		return c
	}
	return -1
}

// The architectures the filters serve. arm64 has the generic syscall
// table (include/uapi/asm-generic/unistd.h): no open, stat, lstat,
// access, readlink or dup2, only their *at forms and dup3.
var (
	archAMD64 = newSysArch(sysArch{
		goarch: "amd64", audit: 0xc000003e, x32: true, oDirectory: 0x10000,
		nrs: map[sysCall]int{
			sysOpen: 2, sysOpenat: 257, sysOpenat2: 437,
			sysStat: 4, sysLstat: 6, sysFstat: 5, sysNewfstatat: 262, sysStatx: 332,
			sysAccess: 21, sysFaccessat: 269, sysFaccessat2: 439,
			sysReadlink: 89, sysReadlinkat: 267,
			sysGetxattr: 191, sysLgetxattr: 192, sysListxattr: 194, sysLlistxattr: 195,
			sysMmap: 9, sysMremap: 25, sysDup: 32, sysDup2: 33, sysDup3: 292, sysFcntl: 72,
			sysIoctl: 16, sysClose: 3, sysCloseRange: 436, sysExecve: 59, sysExecveat: 322,
			sysTruncate: 76, sysFtruncate: 77, sysFallocate: 285,
			sysRead: 0, sysReadv: 19, sysPread64: 17, sysPreadv: 295, sysPreadv2: 327,
			sysWrite: 1, sysWritev: 20, sysPwrite64: 18, sysPwritev: 296, sysPwritev2: 328,
			sysLseek: 8, sysSendfile: 40, sysSplice: 275, sysTee: 276, sysCopyFileRange: 326,
		},
	})
	archARM64 = newSysArch(sysArch{
		goarch: "arm64", audit: 0xc00000b7, oDirectory: 0x4000,
		nrs: map[sysCall]int{
			sysOpenat: 56, sysOpenat2: 437,
			sysFstat: 80, sysNewfstatat: 79, sysStatx: 291,
			sysFaccessat: 48, sysFaccessat2: 439, sysReadlinkat: 78,
			sysGetxattr: 8, sysLgetxattr: 9, sysListxattr: 11, sysLlistxattr: 12,
			sysMmap: 222, sysMremap: 216, sysDup: 23, sysDup3: 24, sysFcntl: 25,
			sysIoctl: 29, sysClose: 57, sysCloseRange: 436, sysExecve: 221, sysExecveat: 281,
			sysTruncate: 45, sysFtruncate: 46, sysFallocate: 47,
			sysRead: 63, sysReadv: 65, sysPread64: 67, sysPreadv: 69, sysPreadv2: 286,
			sysWrite: 64, sysWritev: 66, sysPwrite64: 68, sysPwritev: 70, sysPwritev2: 287,
			sysLseek: 62, sysSendfile: 71, sysSplice: 76, sysTee: 77, sysCopyFileRange: 285,
		},
	})
)

// sysArches are the tables by GOARCH.
var sysArches = map[string]*sysArch{"amd64": archAMD64, "arm64": archARM64}

// hostArch is the running architecture's table, nil where the filters
// serve none (InstallFilter then fails).
var hostArch = sysArches[runtime.GOARCH]
