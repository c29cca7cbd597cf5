//go:build amd64

// The x86_64 filters' decisions, by x86_64 syscall number.

package chardev

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The filter notifies exactly the calls that can concern a device.
func TestFilterDecisions(t *testing.T) {
	const (
		notify = unix.SECCOMP_RET_USER_NOTIF
		allow  = unix.SECCOMP_RET_ALLOW
	)
	neg := func(v int64) uint64 { return uint64(v) }
	in, low := uint64(FDBase+7), uint64(3)
	path := uint64(0x7fff0000)
	for _, c := range []struct {
		name string
		nr   int
		args []uint64
		want uint32
	}{
		{"open", unix.SYS_OPEN, []uint64{path, unix.O_RDONLY | unix.O_CLOEXEC}, notify},
		{"open O_CREAT", unix.SYS_OPEN, []uint64{path, unix.O_RDWR | unix.O_CREAT}, notify},
		{"open O_CREAT|O_EXCL", unix.SYS_OPEN, []uint64{path, unix.O_RDWR | unix.O_CREAT | unix.O_EXCL}, allow},
		{"open O_DIRECTORY", unix.SYS_OPEN, []uint64{path, unix.O_RDONLY | unix.O_DIRECTORY}, allow},
		{"openat", unix.SYS_OPENAT, []uint64{neg(unix.AT_FDCWD), path, unix.O_RDWR}, notify},
		{"openat O_PATH", unix.SYS_OPENAT, []uint64{neg(unix.AT_FDCWD), path, unix.O_PATH}, allow},
		{"openat O_TMPFILE", unix.SYS_OPENAT, []uint64{neg(unix.AT_FDCWD), path, unix.O_TMPFILE | unix.O_RDWR}, allow},
		{"openat2", unix.SYS_OPENAT2, []uint64{low, path, 0x1000, 24}, notify},
		{"fstat low", unix.SYS_FSTAT, []uint64{low, 0}, allow},
		{"fstat in range", unix.SYS_FSTAT, []uint64{in, 0}, notify},
		{"fstat base", unix.SYS_FSTAT, []uint64{FDBase, 0}, notify},
		{"fstat base-1", unix.SYS_FSTAT, []uint64{FDBase - 1, 0}, allow},
		{"fstat -1", unix.SYS_FSTAT, []uint64{neg(-1), 0}, allow},
		{"fstat high bits ignored", unix.SYS_FSTAT, []uint64{1<<32 | low, 0}, allow},
		{"newfstatat path", unix.SYS_NEWFSTATAT, []uint64{in, path, 0, 0}, allow},
		{"newfstatat empty low", unix.SYS_NEWFSTATAT, []uint64{low, path, 0, unix.AT_EMPTY_PATH}, allow},
		{"newfstatat empty in range", unix.SYS_NEWFSTATAT, []uint64{in, path, 0, unix.AT_EMPTY_PATH}, notify},
		{"newfstatat empty cwd", unix.SYS_NEWFSTATAT, []uint64{neg(unix.AT_FDCWD), path, 0, unix.AT_EMPTY_PATH}, allow},
		{"statx path", unix.SYS_STATX, []uint64{in, path, 0, unix.STATX_BASIC_STATS, 0}, allow},
		{"statx empty low", unix.SYS_STATX, []uint64{low, path, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, 0}, allow},
		{"statx empty in range", unix.SYS_STATX, []uint64{in, path, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, 0}, notify},
		{"mmap low", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ, unix.MAP_PRIVATE, low, 0}, allow},
		{"mmap in range", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ, unix.MAP_SHARED, in, 0}, notify},
		{"mmap anonymous", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, neg(-1), 0}, allow},
		{"mmap anonymous, fd ignored", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ, unix.MAP_SHARED | unix.MAP_ANONYMOUS, in, 0}, allow},
		{"mremap grow", unix.SYS_MREMAP, []uint64{path, 4096, 8192, unix.MREMAP_MAYMOVE}, notify},
		{"mremap grow high", unix.SYS_MREMAP, []uint64{path, 8192, 1 << 32, unix.MREMAP_MAYMOVE}, notify},
		{"mremap shrink", unix.SYS_MREMAP, []uint64{path, 8192, 4096, 0}, allow},
		{"mremap shrink high", unix.SYS_MREMAP, []uint64{path, 1<<32 | 1, 1<<32 | 0, 0}, allow},
		{"mremap same", unix.SYS_MREMAP, []uint64{path, 8192, 8192, unix.MREMAP_MAYMOVE | unix.MREMAP_FIXED}, allow},
		{"mremap low word larger, high smaller", unix.SYS_MREMAP, []uint64{path, 1 << 33, 1<<32 | 5, 0}, allow},
		{"dup low", unix.SYS_DUP, []uint64{low}, allow},
		{"dup in range", unix.SYS_DUP, []uint64{in}, notify},
		{"dup2 in range to low", unix.SYS_DUP2, []uint64{in, low}, notify},
		{"dup2 in range to in range", unix.SYS_DUP2, []uint64{in, in + 1}, allow},
		{"dup2 low to in range", unix.SYS_DUP2, []uint64{low, in}, allow},
		{"dup2 to -1", unix.SYS_DUP2, []uint64{in, neg(-1)}, allow},
		{"dup3 in range to low", unix.SYS_DUP3, []uint64{in, low, unix.O_CLOEXEC}, notify},
		{"fcntl F_DUPFD low min", unix.SYS_FCNTL, []uint64{in, unix.F_DUPFD, 0}, notify},
		{"fcntl F_DUPFD_CLOEXEC low min", unix.SYS_FCNTL, []uint64{in, unix.F_DUPFD_CLOEXEC, 10}, notify},
		{"fcntl F_DUPFD min in range", unix.SYS_FCNTL, []uint64{in, unix.F_DUPFD, FDBase}, allow},
		{"fcntl F_DUPFD of low", unix.SYS_FCNTL, []uint64{low, unix.F_DUPFD, 0}, allow},
		{"fcntl F_GETFL", unix.SYS_FCNTL, []uint64{in, unix.F_GETFL, 0}, allow},
		{"read", unix.SYS_READ, []uint64{in, path, 10}, allow},
		{"ioctl", unix.SYS_IOCTL, []uint64{in, 0x40084e64, path}, allow},
	} {
		if got := run(t, filter(false, neuronType), archAMD64.audit, c.nr, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
	// Another architecture's calls pass (its numbers mean other calls).
	if got := run(t, filter(false, neuronType), 0x40000003, unix.SYS_OPEN, path, 0); got != allow {
		t.Errorf("i386 call: %#x", got)
	}
}

// With direct descriptors the filter also sends their ioctls and closes,
// and what replaces them; the rest decides as without.
func TestFilterDecisionsDirect(t *testing.T) {
	const (
		notify = unix.SECCOMP_RET_USER_NOTIF
		allow  = unix.SECCOMP_RET_ALLOW
	)
	neg := func(v int64) uint64 { return uint64(v) }
	in, low := uint64(FDBase+7), uint64(3)
	path := uint64(0x7fff0000)
	for _, c := range []struct {
		name string
		nr   int
		args []uint64
		want uint32
	}{
		{"ioctl low", unix.SYS_IOCTL, []uint64{low, unix.TCGETS, path}, allow},
		{"ioctl low, Neuron command", unix.SYS_IOCTL, []uint64{low, 0x40084e64, path}, notify},
		{"ioctl -1, Neuron command", unix.SYS_IOCTL, []uint64{neg(-1), 0xc0104e01, path}, notify},
		{"ioctl in range", unix.SYS_IOCTL, []uint64{in, 0x40084e64, path}, notify},
		{"ioctl -1", unix.SYS_IOCTL, []uint64{neg(-1), unix.TCGETS, path}, allow},
		{"close low", unix.SYS_CLOSE, []uint64{low}, allow},
		{"close in range", unix.SYS_CLOSE, []uint64{in}, notify},
		{"close_range low", unix.SYS_CLOSE_RANGE, []uint64{3, 100, 0}, allow},
		{"close_range to ~0", unix.SYS_CLOSE_RANGE, []uint64{3, 0xffffffff, 0}, notify},
		{"close_range reaching base", unix.SYS_CLOSE_RANGE, []uint64{3, FDBase, 0}, notify},
		{"dup2 low to in range", unix.SYS_DUP2, []uint64{low, in}, notify},
		{"dup2 in range to in range", unix.SYS_DUP2, []uint64{in, in + 1}, notify},
		{"dup3 low to low", unix.SYS_DUP3, []uint64{low, low + 1, 0}, allow},
		{"dup2 in range to low", unix.SYS_DUP2, []uint64{in, low}, notify},
		{"dup2 to -1", unix.SYS_DUP2, []uint64{in, neg(-1)}, allow},
		{"fstat in range", unix.SYS_FSTAT, []uint64{in, 0}, notify},
		{"mmap in range", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ, unix.MAP_SHARED, in, 0}, notify},
		{"read in range", unix.SYS_READ, []uint64{in, path, 10}, notify},
		{"read low", unix.SYS_READ, []uint64{low, path, 10}, allow},
		{"pwrite64 in range", unix.SYS_PWRITE64, []uint64{in, path, 10, 0}, notify},
		{"lseek in range", unix.SYS_LSEEK, []uint64{in, 0, 0}, notify},
		{"ftruncate in range", unix.SYS_FTRUNCATE, []uint64{in, 0}, notify},
		{"fallocate low", unix.SYS_FALLOCATE, []uint64{low, 3, 0, 4096}, notify},
		{"ftruncate low", unix.SYS_FTRUNCATE, []uint64{low, 0}, notify},
		{"ftruncate -1", unix.SYS_FTRUNCATE, []uint64{neg(-1), 0}, notify},
		{"truncate", unix.SYS_TRUNCATE, []uint64{path, 0}, notify},
		{"sendfile out low, in in range", unix.SYS_SENDFILE, []uint64{low, in, 0, 10}, notify},
		{"sendfile both low", unix.SYS_SENDFILE, []uint64{low, low, 0, 10}, allow},
		{"splice out in range", unix.SYS_SPLICE, []uint64{low, 0, in, 0, 10, 0}, notify},
		{"splice in -1, out low", unix.SYS_SPLICE, []uint64{neg(-1), 0, low, 0, 10, 0}, allow},
		{"fcntl F_OFD_SETLK in range", unix.SYS_FCNTL, []uint64{in, unix.F_OFD_SETLK, path}, notify},
		{"fcntl F_OFD_SETLKW low", unix.SYS_FCNTL, []uint64{low, unix.F_OFD_SETLKW, path}, notify},
		{"fcntl F_SETLK in range", unix.SYS_FCNTL, []uint64{in, unix.F_SETLK, path}, notify},
		{"fcntl F_SETLKW low", unix.SYS_FCNTL, []uint64{low, unix.F_SETLKW, path}, notify},
		{"fcntl F_GETLK low", unix.SYS_FCNTL, []uint64{low, unix.F_GETLK, path}, allow},
		{"fcntl F_GETFL in range", unix.SYS_FCNTL, []uint64{in, unix.F_GETFL, 0}, allow},
		{"pread64 low", unix.SYS_PREAD64, []uint64{low, path, 10, 0}, allow},
		{"fcntl F_DUPFD low min", unix.SYS_FCNTL, []uint64{in, unix.F_DUPFD, 0}, notify},
		{"mmap low", unix.SYS_MMAP, []uint64{0, 4096, unix.PROT_READ, unix.MAP_PRIVATE, low, 0}, allow},
		{"getpid", unix.SYS_GETPID, nil, allow},
		{"execve", unix.SYS_EXECVE, []uint64{path, 0, 0}, notify},
	} {
		if got := run(t, filter(true, neuronType), archAMD64.audit, c.nr, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

// With direct descriptors a call of another ABI fails with ENOSYS: its
// numbers are not the ones the filter compares with, so a 32-bit
// ftruncate (int $0x80) or an x32 call would reach a device descriptor's
// memory file unseen.
func TestFilterDirectRefusesOtherABIs(t *testing.T) {
	const (
		enosys     = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		allow      = unix.SECCOMP_RET_ALLOW
		auditI386  = 0x40000003
		i386Ftrunc = 93
		auditARM   = 0x40000028
		auditArm64 = 0xc00000b7
		fd         = uint64(FDBase + 7)
	)
	for _, c := range []struct {
		name string
		arch uint32
		nr   int
		want uint32
	}{
		{"i386 ftruncate", auditI386, i386Ftrunc, enosys},
		{"i386 getpid", auditI386, 20, enosys},
		{"arm compat", auditARM, 0, enosys},
		{"arm64", auditArm64, 0, enosys},
		{"x32 ftruncate", archAMD64.audit, x32SyscallBit | unix.SYS_FTRUNCATE, enosys},
		{"x32 getpid", archAMD64.audit, x32SyscallBit | unix.SYS_GETPID, enosys},
		{"x86_64 getpid", archAMD64.audit, unix.SYS_GETPID, allow},
	} {
		if got := run(t, filter(true, neuronType), c.arch, c.nr, fd, 4096); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}
