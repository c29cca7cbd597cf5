package chardev

import (
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The path calls of the filter host view (Config.Paths, PathView): the
// call's path is read, made absolute and lexically clean, and routed;
// what the view does not emulate goes on to the kernel.

// nullDevice is the character device whose stat a view's device node
// takes (with the device's number, owner and mode): present in every
// container.
const nullDevice = "/dev/null"

// viewNodeMode is the nodes' mode on a host with the driver's package
// (its udev rule, hostview.UdevMode).
const viewNodeMode = 0o666

func viewNodeStat(st *unix.Stat_t) {
	st.Mode = unix.S_IFCHR | viewNodeMode
	st.Uid, st.Gid = 0, 0
}

func viewNodeStatx(stx *unix.Statx_t) {
	stx.Mode = unix.S_IFCHR | viewNodeMode
	stx.Uid, stx.Gid = 0, 0
}

// handleView serves a call of the view: a path call, or a write of an
// attribute's descriptor. It reports false for every other call, which
// handle then serves as without a view.
func (s *Supervisor) handleView(n *seccompNotif, call sysCall, sc *scratch) bool {
	if call == sysWrite || call == sysPwrite64 {
		return s.handleAttrWrite(n)
	}
	c, ok := pathCallFor(call)
	if !ok {
		return false
	}
	a := n.Data.Args
	flags := uint64(0)
	if c.flags >= 0 {
		flags = a[c.flags]
	}
	if (c.kind == pathStat && c.flags >= 0 || c.kind == pathStatx) && flags&unix.AT_EMPTY_PATH != 0 {
		return false // an fstat (handleEmptyPathStat)
	}
	if c.call == sysOpenat2 {
		var how unix.OpenHow
		if readStruct(n.Pid, a[2], &how) != nil || a[3] < uint64(unsafe.Sizeof(how)) {
			s.pass(n.ID)
			return true
		}
		flags = how.Flags
	}
	dirfd := int32(unix.AT_FDCWD)
	if c.dirfd >= 0 {
		dirfd = int32(a[c.dirfd])
	}
	path, err := readPath(n.Pid, a[c.path], sc.buf[:])
	if err != nil || len(path) == 0 {
		s.pass(n.ID)
		return true
	}
	r := s.route(n.Pid, dirfd, path)
	if r.Kind == RouteReal {
		if c.kind == pathOpen {
			// handleOpen still finds a device descriptor reopened
			// through /proc/PID/fd.
			return false
		}
		s.pass(n.ID)
		return true
	}
	if path[len(path)-1] == '/' {
		// A trailing slash follows a last symlink whatever the flags
		// say; cleaning took it off.
		flags &^= unix.O_NOFOLLOW | unix.AT_SYMLINK_NOFOLLOW
		if c.kind == pathLstat {
			c = &pathCall{call: sysStat, kind: pathStat, path: c.path}
		}
	}
	s.serveRoute(n, c, r, flags)
	return true
}

// route makes path absolute (from the caller's cwd or dirfd) and clean,
// reads a path inside the shadow tree as the one it shadows, and routes
// it.
func (s *Supervisor) route(pid uint32, dirfd int32, path []byte) Route {
	var abs string
	if path[0] == '/' {
		// Most paths are neither /sys, /dev nor /proc/devices: they
		// cost no allocation.
		if !viewPrefix(path, s.paths.Root()) {
			return Route{}
		}
		abs = filepath.Clean(string(path))
	} else {
		base := "/proc/" + strconv.FormatUint(uint64(pid), 10)
		if dirfd == unix.AT_FDCWD {
			base += "/cwd"
		} else {
			base += "/fd/" + strconv.FormatInt(int64(dirfd), 10)
		}
		dir, err := readlink(base)
		if err != nil || !strings.HasPrefix(dir, "/") {
			return Route{}
		}
		abs = filepath.Join(dir, string(path))
	}
	if root := s.paths.Root(); strings.HasPrefix(abs, root+"/") {
		abs = abs[len(root):]
	}
	return s.paths.Route(abs)
}

// viewPrefix reports whether an absolute path may be the view's: under
// /sys, /dev or /proc, or in the shadow tree (root). A path that reaches
// them through ".." from elsewhere is not seen (not a boundary).
func viewPrefix(path []byte, root string) bool {
	if len(path) >= 4 {
		switch string(path[:4]) {
		case "/sys", "/dev", "/pro":
			return true
		}
	}
	return len(path) > len(root) && string(path[:len(root)]) == root
}

func readlink(path string) (string, error) {
	buf := make([]byte, unix.PathMax)
	k, err := unix.Readlink(path, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:k]), nil
}

// serveRoute answers call c whose path the view emulates as r.
func (s *Supervisor) serveRoute(n *seccompNotif, c *pathCall, r Route, flags uint64) {
	a := n.Data.Args
	switch c.kind {
	case pathOpen:
		s.openView(n, r, flags)
	case pathStat, pathLstat:
		nofollow := c.kind == pathLstat || flags&unix.AT_SYMLINK_NOFOLLOW != 0
		s.statView(n, r, a[c.path+1], nofollow, false, 0)
	case pathStatx:
		s.statView(n, r, a[4], flags&unix.AT_SYMLINK_NOFOLLOW != 0, true, uint32(a[3]))
	case pathAccess:
		s.accessView(n, r, uint32(a[c.path+1]), flags&unix.AT_EACCESS != 0)
	case pathReadlink:
		s.readlinkView(n, r, a[c.path+1], a[c.path+2])
	case pathXattr:
		// No extended attribute on a sysfs file or device node: a
		// list is empty, a get finds none.
		if c.call == sysListxattr || c.call == sysLlistxattr {
			s.respond(n.ID, 0, 0, 0)
			return
		}
		s.respond(n.ID, -1, unix.ENODATA, 0)
	default:
		s.pass(n.ID)
	}
}
