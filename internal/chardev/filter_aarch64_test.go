package chardev

// (Not named _arm64_test.go: that suffix would build it on arm64 only.)

import (
	"testing"

	"golang.org/x/sys/unix"
)

// arm64Case is one call for an arm64 filter, by call (its number from
// archARM64) or, with nr set, by raw number.
type arm64Case struct {
	name string
	call sysCall
	args []uint64
	want uint32
}

func runARM64(t *testing.T, prog []unix.SockFilter, cases []arm64Case) {
	t.Helper()
	for _, c := range cases {
		nr, ok := archARM64.nr(c.call)
		if !ok {
			t.Fatalf("%s: arm64 has no %s", c.name, sysNames[c.call])
		}
		if got := run(t, prog, archARM64.audit, nr, c.args...); got != c.want {
			t.Errorf("%s (arm64 %d): %#x, want %#x", c.name, nr, got, c.want)
		}
	}
}

// The arm64 view filter, by arm64's numbers: every path call reaches the
// daemon (an openat whatever its path: BPF cannot read it, and the
// supervisor lets the host's go on), and what needs no path stays in the
// kernel for descriptors below FDBase.
func TestFilterViewDecisionsARM64(t *testing.T) {
	const (
		notify = unix.SECCOMP_RET_USER_NOTIF
		allow  = unix.SECCOMP_RET_ALLOW
	)
	neg := func(v int64) uint64 { return uint64(v) }
	in, low := uint64(FDBase+7), uint64(3)
	path := uint64(0x7fff0000)
	cwd := neg(unix.AT_FDCWD)
	prog := buildFilter(filterMode{arch: archARM64, direct: true, paths: true, ioctlType: neuronType})
	runARM64(t, prog, []arm64Case{
		{"openat /dev/neuron0", sysOpenat, []uint64{cwd, path, unix.O_RDWR | unix.O_CLOEXEC}, notify},
		{"openat O_DIRECTORY (a /sys directory)", sysOpenat, []uint64{cwd, path, uint64(archARM64.oDirectory)}, notify},
		{"openat O_PATH", sysOpenat, []uint64{cwd, path, unix.O_PATH}, notify},
		{"openat O_CREAT|O_EXCL", sysOpenat, []uint64{cwd, path, unix.O_CREAT | unix.O_EXCL | unix.O_RDWR}, allow},
		{"openat2", sysOpenat2, []uint64{cwd, path, path, 24}, notify},
		{"newfstatat path", sysNewfstatat, []uint64{low, path, 0, 0}, notify},
		{"newfstatat empty low", sysNewfstatat, []uint64{low, path, 0, unix.AT_EMPTY_PATH}, allow},
		{"newfstatat empty in range", sysNewfstatat, []uint64{in, path, 0, unix.AT_EMPTY_PATH}, notify},
		{"statx path", sysStatx, []uint64{cwd, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, path}, notify},
		{"statx empty low", sysStatx, []uint64{low, path, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, path}, allow},
		{"faccessat", sysFaccessat, []uint64{cwd, path, unix.R_OK}, notify},
		{"faccessat2", sysFaccessat2, []uint64{cwd, path, unix.R_OK, unix.AT_EACCESS}, notify},
		{"readlinkat", sysReadlinkat, []uint64{cwd, path, path, 100}, notify},
		{"lgetxattr", sysLgetxattr, []uint64{path, path, 0, 0}, notify},
		{"fstat low", sysFstat, []uint64{low, path}, allow},
		{"fstat in range", sysFstat, []uint64{in, path}, notify},
		{"read low", sysRead, []uint64{low, path, 10}, allow},
		{"write low", sysWrite, []uint64{low, path, 10}, allow},
		{"write in range (an attribute's store)", sysWrite, []uint64{in, path, 10}, notify},
		{"mmap low", sysMmap, []uint64{0, 4096, unix.PROT_READ, unix.MAP_SHARED, low, 0}, allow},
		{"mmap in range", sysMmap, []uint64{0, 4096, unix.PROT_READ, unix.MAP_SHARED, in, 0}, notify},
		{"mremap grow", sysMremap, []uint64{path, 4096, 8192, unix.MREMAP_MAYMOVE}, notify},
		{"ioctl low", sysIoctl, []uint64{low, unix.TCGETS, path}, allow},
		{"ioctl low, Neuron command", sysIoctl, []uint64{low, 0x40084e64, path}, notify},
		{"ioctl in range", sysIoctl, []uint64{in, unix.TCGETS, path}, notify},
		{"close low", sysClose, []uint64{low}, allow},
		{"close in range", sysClose, []uint64{in}, notify},
		{"dup3 in range to low", sysDup3, []uint64{in, low, 0}, notify},
		{"dup3 low to low", sysDup3, []uint64{low, low + 1, 0}, allow},
		{"ftruncate low", sysFtruncate, []uint64{low, 0}, notify},
		{"execve", sysExecve, []uint64{path, 0, 0}, notify},
	})
	// getdents64 (61) and fchdir (50) of a shadow directory's descriptor
	// stay in the kernel; 2 and 4, x86_64's open and stat, are other
	// calls on arm64 (io_submit, io_getevents): not path calls.
	for _, nr := range []int{61, 50, 2, 4} {
		if got := run(t, prog, archARM64.audit, nr, low, path, 0, 0); got != allow {
			t.Errorf("arm64 call %d: %#x, want allow", nr, got)
		}
	}
}

// Without the view, arm64's O_DIRECTORY (0x4000, not x86_64's 0x10000,
// which is O_DIRECT there) keeps an open in the kernel; calls of another
// ABI fail with ENOSYS in the direct filters and pass in the FUSE one.
func TestFilterDecisionsARM64(t *testing.T) {
	const (
		notify = unix.SECCOMP_RET_USER_NOTIF
		allow  = unix.SECCOMP_RET_ALLOW
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	cwd, path := uint64(0xffffffffffffff9c), uint64(0x7fff0000)
	fuse := buildFilter(filterMode{arch: archARM64, ioctlType: neuronType})
	runARM64(t, fuse, []arm64Case{
		{"openat", sysOpenat, []uint64{cwd, path, unix.O_RDWR}, notify},
		{"openat O_DIRECTORY", sysOpenat, []uint64{cwd, path, 0x4000}, allow},
		{"openat O_DIRECT", sysOpenat, []uint64{cwd, path, 0x10000 | unix.O_RDWR}, notify},
		{"openat O_PATH", sysOpenat, []uint64{cwd, path, unix.O_PATH}, allow},
		{"newfstatat path", sysNewfstatat, []uint64{cwd, path, 0, 0}, allow},
		{"statx empty in range", sysStatx, []uint64{FDBase, path, unix.AT_EMPTY_PATH, 0, path}, notify},
		{"dup3 in range to low", sysDup3, []uint64{FDBase, 3, 0}, notify},
	})
	direct := buildFilter(filterMode{arch: archARM64, direct: true, ioctlType: neuronType})
	for _, c := range []struct {
		name     string
		arch     uint32
		prog     []unix.SockFilter
		nr       int
		want     uint32
		describe string
	}{
		{"AArch32 call, direct", unix.AUDIT_ARCH_ARM, direct, 93, enosys, "compat numbers mean other calls"},
		{"x86_64 call, direct", unix.AUDIT_ARCH_X86_64, direct, 77, enosys, "not this ABI"},
		{"AArch32 call, FUSE", unix.AUDIT_ARCH_ARM, fuse, 93, allow, "FUSE sees every ABI"},
		{"arm64 getpid, direct", unix.AUDIT_ARCH_AARCH64, direct, 172, allow, "no device call"},
		{"arm64 x32 bit is no ABI", unix.AUDIT_ARCH_AARCH64, direct, x32SyscallBit | 172, allow, "arm64 has no x32"},
	} {
		if got := run(t, c.prog, c.arch, c.nr, FDBase, 0); got != c.want {
			t.Errorf("%s (%s): %#x, want %#x", c.name, c.describe, got, c.want)
		}
	}
}
