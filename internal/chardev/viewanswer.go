package chardev

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The answers of the filter host view to the path calls it emulates.

// openView answers an open of an emulated path: a device node's with a
// direct descriptor, an attribute's with a snapshot of its content
// (openAttr), anything else of the shadow tree with the shadow's own open.
func (s *Supervisor) openView(n *seccompNotif, r Route, flags uint64) {
	id, tid := n.ID, n.Pid
	if r.Kind == RouteDevice && flags&unix.O_PATH == 0 {
		if flags&unix.O_DIRECTORY != 0 {
			s.respond(id, 0, unix.ENOTDIR, 0)
			return
		}
		if s.valid(id) {
			s.slow(func() { s.openDevice(id, tid, r.Minor, flags) })
		}
		return
	}
	s.slow(func() { s.openShadow(id, tid, r.Shadow, flags) })
}

// openShadow opens shadow, the file standing for an emulated path, for
// task tid.
func (s *Supervisor) openShadow(id uint64, tid uint32, shadow string, flags uint64) {
	follow := 0
	if flags&unix.O_NOFOLLOW != 0 {
		follow = unix.O_NOFOLLOW
	}
	// The shadow's file, its links followed: an attribute's is known by
	// its path.
	ref, err := unix.Open(shadow, unix.O_PATH|unix.O_CLOEXEC|follow, 0)
	if err != nil {
		errno := errnoOf(err)
		if errno == unix.ENOENT && flags&unix.O_CREAT != 0 {
			errno = unix.EACCES // sysfs makes no files
		}
		s.respond(id, 0, errno, 0)
		return
	}
	defer unix.Close(ref)
	var st unix.Stat_t
	if err := unix.Fstat(ref, &st); err != nil {
		s.respond(id, 0, errnoOf(err), 0)
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && flags&unix.O_PATH == 0 {
		if real, err := readlink("/proc/self/fd/" + strconv.Itoa(ref)); err == nil {
			if i, ok := s.paths.Attribute(real); ok {
				s.openAttr(id, tid, i, flags)
				return
			}
		}
	}
	acc := int(flags) & unix.O_ACCMODE
	if flags&unix.O_PATH == 0 && acc != unix.O_RDONLY {
		// Directories, links and /proc/devices are read-only (root's).
		errno := unix.EACCES
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			errno = unix.EISDIR
		}
		s.respond(id, 0, errno, 0)
		return
	}
	keep := unix.O_ACCMODE | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_PATH | unix.O_NONBLOCK
	fd, err := unix.Open(shadow, int(flags)&keep|unix.O_CLOEXEC, 0)
	if err != nil {
		s.respond(id, 0, errnoOf(err), 0)
		return
	}
	defer unix.Close(fd)
	s.installLow(id, fd, flags&unix.O_CLOEXEC != 0)
}

// attrPrefix names the memory files holding an attribute's content:
// "neuronfs-attr:I", attribute I of the view.
const attrPrefix = "neuronfs-attr:"

// openAttr answers an open of attribute i with a memory file holding its
// content at the open, as sysfs renders it at the first read. An open
// for writing goes from FDBase up, where the filter sends its writes
// (handleAttrWrite); a read-only one where the kernel puts it, so its
// reads and close stay in the kernel.
func (s *Supervisor) openAttr(id uint64, tid uint32, i int, flags uint64) {
	at := s.paths.Attr(i)
	acc := int(flags) & unix.O_ACCMODE
	uid := callerUID(tid, true)
	// The daemon's user writes the driver's root-only attributes (reset),
	// as it does as root of its user namespace under a rootless mount: a
	// suite passes the same in a container as rootless.
	root := uid == 0 || uid == os.Getuid()
	if errno := attrAccess(at, acc, root, at.Own && uid == os.Getuid()); errno != 0 {
		s.respond(id, 0, errno, 0)
		return
	}
	fd, err := unix.MemfdCreate(attrPrefix+strconv.Itoa(i), unix.MFD_CLOEXEC)
	if err != nil {
		s.respond(id, 0, errnoOf(err), 0)
		return
	}
	defer unix.Close(fd)
	if acc != unix.O_WRONLY && at.Show != nil {
		content := []byte(at.Show())
		if l := at.UnprivilegedLen; l > 0 && len(content) > l && !root {
			content = content[:l]
		}
		if _, err := unix.Write(fd, content); err != nil {
			s.respond(id, 0, errnoOf(err), 0)
			return
		}
		unix.Seek(fd, 0, 0)
	}
	// Reopened with the access asked for: F_GETFL and the kernel's own
	// EBADF checks then are the attribute's.
	mode := acc
	if mode == unix.O_ACCMODE {
		mode = unix.O_RDWR
	}
	own, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), mode|unix.O_CLOEXEC, 0)
	if err != nil {
		s.respond(id, 0, errnoOf(err), 0)
		return
	}
	defer unix.Close(own)
	cloexec := flags&unix.O_CLOEXEC != 0
	if acc == unix.O_RDONLY {
		s.installLow(id, own, cloexec)
		return
	}
	s.install(id, tid, own, cloexec)
}

// attrAccess is the open's errno: sysfs files are root's (the control
// files the daemon's user's: owner), and an attribute without a store
// method takes no write even from root.
func attrAccess(at Attribute, acc int, root, owner bool) unix.Errno {
	read := acc == unix.O_RDONLY || acc == unix.O_RDWR
	write := acc != unix.O_RDONLY
	if write && at.Store == nil || read && at.Show == nil && acc == unix.O_RDONLY {
		return unix.EACCES
	}
	if root {
		return 0
	}
	r, w := uint32(0o004), uint32(0o002)
	if owner {
		r, w = 0o400, 0o200
	}
	if read && at.Mode&r == 0 || write && at.Mode&w == 0 {
		return unix.EACCES
	}
	return 0
}

// installLow installs src as the answer to notification id at the lowest
// free number, as the kernel's own open would.
func (s *Supervisor) installLow(id uint64, src int, cloexec bool) {
	add := seccompNotifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(src)}
	if cloexec {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	if _, e := addfdUninterrupted(s.listener, &add); e != 0 && e != unix.ENOENT {
		s.respond(id, 0, e, 0)
	}
}

// handleAttrWrite serves write and pwrite64 of an attribute's descriptor
// (openAttr) with the attribute's store, as sysfs hands a write (up to a
// page) to the driver; every other write goes ahead, or on to the
// refusals of device descriptors.
func (s *Supervisor) handleAttrWrite(n *seccompNotif) bool {
	fd := int32(n.Data.Args[0])
	if fd < FDBase {
		return false
	}
	i, ok := s.attrIndex(n.Pid, fd)
	if !ok {
		return false
	}
	if !s.hasAccess(n.Pid, fd, unix.O_WRONLY) {
		s.respond(n.ID, -1, unix.EBADF, 0)
		return true
	}
	count := min(n.Data.Args[2], 4096)
	data := make([]byte, count)
	if count > 0 {
		k, _ := readMem(n.Pid, n.Data.Args[1], data)
		if uint64(k) < count {
			s.respond(n.ID, -1, unix.EFAULT, 0)
			return true
		}
	}
	id, store := n.ID, s.paths.Attr(i).Store
	s.slow(func() {
		if !s.valid(id) {
			return
		}
		if errno := store(data); errno != 0 {
			s.respond(id, -1, errno, 0)
			return
		}
		s.respond(id, int64(count), 0, 0)
	})
	return true
}

// attrIndex is the attribute whose memory file (openAttr) is task pid's
// descriptor fd, if it is one.
func (s *Supervisor) attrIndex(pid uint32, fd int32) (int, bool) {
	link, err := readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	rest, ok := strings.CutPrefix(link, "/memfd:"+attrPrefix)
	if err != nil || !ok {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimSuffix(rest, " (deleted)"))
	return i, err == nil
}

// statView answers a stat of an emulated path: the device node's, or the
// shadow's made root's.
func (s *Supervisor) statView(n *seccompNotif, r Route, buf uint64, nofollow, isStatx bool, mask uint32) {
	if r.Kind == RouteDevice {
		out, ok := s.nodeStat(r.Minor, isStatx, mask)
		if !ok {
			s.pass(n.ID)
			return
		}
		s.writeAnswer(n, buf, out, 0)
		return
	}
	flags := 0
	if nofollow {
		flags = unix.AT_SYMLINK_NOFOLLOW
	}
	var out []byte
	if isStatx {
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, r.Shadow, flags, int(mask), &stx); err != nil {
			s.respond(n.ID, -1, errnoOf(err), 0)
			return
		}
		if !r.Own {
			stx.Uid, stx.Gid = 0, 0
		}
		capNlink(&stx.Nlink, uint32(stx.Mode))
		out = unsafe.Slice((*byte)(unsafe.Pointer(&stx)), unsafe.Sizeof(stx))
	} else {
		var st unix.Stat_t
		if err := unix.Fstatat(unix.AT_FDCWD, r.Shadow, &st, flags); err != nil {
			s.respond(n.ID, -1, errnoOf(err), 0)
			return
		}
		if !r.Own {
			st.Uid, st.Gid = 0, 0
		}
		capNlink(&st.Nlink, st.Mode)
		out = unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st))
	}
	s.writeAnswer(n, buf, out, 0)
}

// capNlink caps the link count a stat reports: the view's attributes
// are links of a few files (hostview.Shadow), a sysfs file has one.
// stat's st_nlink is 64-bit on x86_64, 32-bit on arm64.
func capNlink[T uint32 | uint64](nlink *T, mode uint32) {
	if mode&unix.S_IFMT == unix.S_IFREG {
		*nlink = min(*nlink, 1)
	}
}

// accessView answers access/faccessat/faccessat2 of an emulated path by
// its mode, the owner being root.
func (s *Supervisor) accessView(n *seccompNotif, r Route, want uint32, effective bool) {
	mode := uint32(unix.S_IFCHR | viewNodeMode)
	if r.Kind == RouteShadow {
		var st unix.Stat_t
		if err := unix.Stat(r.Shadow, &st); err != nil {
			s.respond(n.ID, -1, errnoOf(err), 0)
			return
		}
		mode = st.Mode
	}
	uid := callerUID(n.Pid, effective)
	rb, wb, xb := uint32(0o004), uint32(0o002), uint32(0o001)
	if r.Own && uid == os.Getuid() {
		rb, wb, xb = 0o400, 0o200, 0o100
	}
	ok := true
	switch {
	case uid == 0:
		// Root reads and writes anything; executes what some x bit
		// allows, or a directory.
		ok = want&unix.X_OK == 0 || mode&0o111 != 0 || mode&unix.S_IFMT == unix.S_IFDIR
	default:
		ok = want&unix.R_OK == 0 || mode&rb != 0
		ok = ok && (want&unix.W_OK == 0 || mode&wb != 0)
		ok = ok && (want&unix.X_OK == 0 || mode&xb != 0)
	}
	if ok {
		s.respond(n.ID, 0, 0, 0)
		return
	}
	s.respond(n.ID, -1, unix.EACCES, 0)
}

// readlinkView answers readlink/readlinkat of an emulated path: a node is
// no link (EINVAL), a shadow link reads as the driver's.
func (s *Supervisor) readlinkView(n *seccompNotif, r Route, buf, size uint64) {
	if r.Kind == RouteDevice {
		s.respond(n.ID, -1, unix.EINVAL, 0)
		return
	}
	target, err := readlink(r.Shadow)
	if err != nil {
		s.respond(n.ID, -1, errnoOf(err), 0)
		return
	}
	if int64(size) <= 0 {
		s.respond(n.ID, -1, unix.EINVAL, 0)
		return
	}
	out := []byte(target)[:min(uint64(len(target)), size)]
	s.writeAnswer(n, buf, out, int64(len(out)))
}

// callerUID is task tid's real (or, effective, effective) user id from
// its status, or -1.
func callerUID(tid uint32, effective bool) int {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return -1
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			f := bytes.Fields(rest)
			k := 0
			if effective {
				k = 1
			}
			if len(f) > k {
				if v, err := strconv.Atoi(string(f[k])); err == nil {
					return v
				}
			}
		}
	}
	return -1
}

// errnoOf is err's errno, or EIO.
func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
