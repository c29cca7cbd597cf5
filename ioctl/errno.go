package ioctl

import "syscall"

// Kernel-internal errnos the driver returns that user space never sees as
// such through FUSE: the kernel rejects a FUSE reply whose errno is 512 or
// more and leaves the caller asleep, so they are mapped before replying.
const (
	ENOIOCTLCMD syscall.Errno = 515 // the VFS shows it as ENOTTY
	ENOTSUPP    syscall.Errno = 524 // shown here as EOPNOTSUPP
)

// InResult reports whether an ioctl's errno travels in the reply's result
// field instead of its error header. The header only carries errnos below
// 512; the result is returned by the syscall as is, so user space sees the
// driver's ENOTSUPP (524) unchanged and the VFS turns ENOIOCTLCMD into
// ENOTTY, exactly as for the real driver.
func InResult(e syscall.Errno) bool { return e == ENOTSUPP || e == ENOIOCTLCMD }

// ClampErrno maps an errno to one FUSE can deliver (1..511, not ENOSYS).
func ClampErrno(e syscall.Errno) syscall.Errno {
	switch {
	case e == 0:
		return 0
	case e == ENOIOCTLCMD:
		return syscall.ENOTTY
	case e == ENOTSUPP:
		return syscall.EOPNOTSUPP
	case e == syscall.ENOSYS:
		return syscall.ENOTTY // FUSE rewrites an ioctl's ENOSYS so; say so here
	case e >= 512:
		return syscall.EIO
	}
	return e
}
