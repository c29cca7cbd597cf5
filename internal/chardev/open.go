package chardev

import (
	"bytes"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// handleOpen redirects an open that resolves to one of the nodes. The
// decision is made here, on the receiving thread; only a device open
// leaves it.
func (s *Supervisor) handleOpen(n *seccompNotif, sc *scratch, dirfd int32, pathPtr, flags uint64) {
	if s.stalled.Load() >= s.maxLoops {
		// Resolving could stall the last loop too.
		s.pass(n.ID)
		return
	}
	sc.resolvingTid.Store(n.Pid)
	sc.resolving.Store(n.ID)
	path, err := readPath(n.Pid, pathPtr, sc.buf[:])
	var minor int
	ok := false
	if err == nil && flags&unix.O_PATH == 0 {
		// Not checked for validity yet: a pass is harmless whatever the
		// target turned out to be.
		minor, ok = s.resolve(sc, n.Pid, dirfd, path, flags&unix.O_NOFOLLOW != 0)
	}
	if !sc.resolving.CompareAndSwap(n.ID, 0) {
		return // answered CONTINUE at ResolveBound
	}
	if !ok {
		s.pass(n.ID)
		return
	}
	if !s.valid(n.ID) {
		s.pass(n.ID)
		return
	}
	if flags&unix.O_DIRECTORY != 0 {
		s.respond(n.ID, 0, unix.ENOTDIR, 0)
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() { s.openDevice(id, tid, minor, flags) })
}

// handleOpenat2 is handleOpen for openat2, whose flags are in the
// struct open_how at howPtr (of size howSize).
func (s *Supervisor) handleOpenat2(n *seccompNotif, sc *scratch, dirfd int32, pathPtr, howPtr, howSize uint64) {
	var how unix.OpenHow
	if readStruct(n.Pid, howPtr, &how) != nil || howSize < uint64(unsafe.Sizeof(how)) {
		s.pass(n.ID)
		return
	}
	if how.Flags&(unix.O_PATH|unix.O_DIRECTORY) != 0 {
		s.pass(n.ID)
		return
	}
	s.handleOpen(n, sc, dirfd, pathPtr, how.Flags)
}

func (s *Supervisor) openDevice(id uint64, tid uint32, minor int, flags uint64) {
	openFlags := int(flags) & (unix.O_ACCMODE | unix.O_NONBLOCK | unix.O_APPEND | unix.O_SYNC)
	fd, err := s.open(minor, openFlags, int32(tid))
	if err != nil {
		errno, ok := err.(unix.Errno)
		if !ok {
			errno = unix.EIO
		}
		s.respond(id, 0, errno, 0)
		return
	}
	defer unix.Close(fd)
	s.install(id, tid, fd, flags&unix.O_CLOEXEC != 0)
}

// resolve decides, with the kernel's own path walk from the target's root,
// cwd or directory fd, whether path names one of the nodes (or the FUSE
// file behind one).
func (s *Supervisor) resolve(sc *scratch, pid uint32, dirfd int32, path []byte, noFollow bool) (int, bool) {
	if len(path) == 0 {
		return 0, false
	}
	p := append(sc.path[:0], "/proc/"...)
	p = strconv.AppendUint(p, uint64(pid), 10)
	switch {
	case procSelf(path) > 0:
		// The target's own /proc entries: walked from its root, "self"
		// would be the supervisor.
		path = path[procSelf(path):]
	case path[0] == '/':
		p = append(p, "/root"...)
	case dirfd == unix.AT_FDCWD:
		p = append(p, "/cwd/"...)
	default:
		p = append(p, "/fd/"...)
		p = strconv.AppendInt(p, int64(dirfd), 10)
		p = append(p, '/')
	}
	if len(p)+len(path)+1 > len(sc.path) {
		return 0, false
	}
	p = append(p, path...)
	p = append(p, 0)
	flags := unix.AT_STATX_DONT_SYNC // cached attributes: a FUSE file costs no GETATTR
	if noFollow {
		flags |= unix.AT_SYMLINK_NOFOLLOW
	}
	var stx unix.Statx_t
	cwd := unix.AT_FDCWD // the path is absolute
	if _, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(cwd), uintptr(unsafe.Pointer(&p[0])), uintptr(flags), unix.STATX_TYPE|unix.STATX_INO, uintptr(unsafe.Pointer(&stx)), 0); e != 0 {
		return 0, false
	}
	switch stx.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if stx.Rdev_major != s.major {
			minor, ok := s.standIns[fileID{unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}]
			return minor, ok
		}
		minor := int(stx.Rdev_minor)
		return minor, minor < s.devices
	case unix.S_IFREG:
		return s.fuseNode(&stx)
	}
	return 0, false
}

// procSelf is the length of path's prefix that names the calling task's
// own /proc directory ("/proc/self", "/proc/thread-self", or "/dev/fd",
// which names its fd directory), or 0. What follows is the part of the
// path inside that directory ("/fd/N"; for /dev/fd the "fd" is kept).
func procSelf(path []byte) int {
	for _, pre := range []string{"/proc/self", "/proc/thread-self"} {
		if bytes.HasPrefix(path, []byte(pre)) && (len(path) == len(pre) || path[len(pre)] == '/') {
			return len(pre)
		}
	}
	if bytes.HasPrefix(path, []byte("/dev/fd/")) {
		return len("/dev")
	}
	return 0
}

// fuseNode reports which device's file (Config.Files) stx is, if it is
// one.
func (s *Supervisor) fuseNode(stx *unix.Statx_t) (int, bool) {
	minor, ok := s.files[fileID{unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}]
	return minor, ok
}

// ourFD reports which device an fd of the target is, if it is one.
func (s *Supervisor) ourFD(pid uint32, fd int32) (int, bool) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, fmt.Sprintf("/proc/%d/fd/%d", pid, fd), unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &stx); err != nil {
		return 0, false
	}
	return s.fuseNode(&stx)
}
