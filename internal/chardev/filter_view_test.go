//go:build amd64

package chardev

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The filter host view's filter also sends every call that names a path,
// whatever its flags, and leaves descriptor-only calls on low
// descriptors in the kernel.
func TestFilterViewDecisions(t *testing.T) {
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
		{"open O_DIRECTORY", unix.SYS_OPEN, []uint64{path, unix.O_RDONLY | unix.O_DIRECTORY}, notify},
		{"openat O_PATH", unix.SYS_OPENAT, []uint64{neg(unix.AT_FDCWD), path, unix.O_PATH}, notify},
		{"openat O_CREAT|O_EXCL", unix.SYS_OPENAT, []uint64{neg(unix.AT_FDCWD), path, unix.O_CREAT | unix.O_EXCL | unix.O_RDWR}, allow},
		{"stat", unix.SYS_STAT, []uint64{path, 0}, notify},
		{"lstat", unix.SYS_LSTAT, []uint64{path, 0}, notify},
		{"newfstatat path", unix.SYS_NEWFSTATAT, []uint64{low, path, 0, 0}, notify},
		{"newfstatat empty low", unix.SYS_NEWFSTATAT, []uint64{low, path, 0, unix.AT_EMPTY_PATH}, allow},
		{"statx path", unix.SYS_STATX, []uint64{neg(unix.AT_FDCWD), path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, 0}, notify},
		{"statx empty low", unix.SYS_STATX, []uint64{low, path, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, 0}, allow},
		{"access", unix.SYS_ACCESS, []uint64{path, unix.R_OK}, notify},
		{"faccessat", unix.SYS_FACCESSAT, []uint64{neg(unix.AT_FDCWD), path, unix.R_OK}, notify},
		{"faccessat2", unix.SYS_FACCESSAT2, []uint64{neg(unix.AT_FDCWD), path, unix.R_OK, 0}, notify},
		{"readlink", unix.SYS_READLINK, []uint64{path, path, 100}, notify},
		{"readlinkat", unix.SYS_READLINKAT, []uint64{low, path, path, 100}, notify},
		{"lgetxattr", unix.SYS_LGETXATTR, []uint64{path, path, 0, 0}, notify},
		{"fstat low", unix.SYS_FSTAT, []uint64{low, 0}, allow},
		{"read low", unix.SYS_READ, []uint64{low, path, 10}, allow},
		{"write in range", unix.SYS_WRITE, []uint64{in, path, 10}, notify},
		{"close low", unix.SYS_CLOSE, []uint64{low}, allow},
		{"getpid", unix.SYS_GETPID, nil, allow},
	} {
		if got := run(t, pathFilter(neuronType), archAMD64.audit, c.nr, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
	// Without the view the path calls stay in the kernel.
	if got := run(t, filter(true, neuronType), archAMD64.audit, unix.SYS_STAT, path, 0); got != allow {
		t.Errorf("stat under the direct filter: %#x, want allow", got)
	}
}
