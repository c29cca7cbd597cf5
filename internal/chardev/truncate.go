package chardev

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// handleTruncate fails truncate(2) of a path that names a device's
// memory file (through /proc/self/fd, /dev/fd, /proc/PID/fd, or a
// symbolic link to one of them) or node with the character device's
// EINVAL: a client may not resize the file the daemon maps. Every other
// truncate goes ahead. (Another thread of the caller can still change a
// link between this check and the call: the memfd's seal and the file
// backing's Landlock-restricted opens do not depend on the check.)
func (s *Supervisor) handleTruncate(n *seccompNotif, sc *scratch, pathPtr uint64) {
	path, err := readPath(n.Pid, pathPtr, sc.buf[:])
	if err != nil {
		s.pass(n.ID)
		return
	}
	path = expandSelfLinks(n.Pid, path)
	if _, ok := s.resolve(sc, n.Pid, unix.AT_FDCWD, path, false); ok && s.valid(n.ID) {
		s.respond(n.ID, -1, unix.EINVAL, 0)
		return
	}
	s.pass(n.ID)
}

// maxLinks is the kernel's limit of symbolic links on one path walk.
const maxLinks = 40

// expandSelfLinks replaces the symbolic links on path, as task pid sees
// it, by their targets, until the path names pid's own /proc directory
// (procSelf) or has no link left outside /proc: resolve walks the path
// from the task's root, but the kernel follows an absolute link from the
// supervisor's, where "/proc/self" (the target of /dev/fd) is the
// supervisor. Links inside /proc are left to the kernel: the ones
// there are its own, and name what they name whoever follows them.
func expandSelfLinks(pid uint32, path []byte) []byte {
	p := string(path)
	for range maxLinks {
		if procSelf([]byte(p)) > 0 {
			break
		}
		next, ok := expandFirstLink(pid, p)
		if !ok {
			break
		}
		p = next
	}
	return []byte(p)
}

// expandFirstLink replaces the first symbolic link on path (outside
// /proc) by its target, and reports whether there was one.
func expandFirstLink(pid uint32, p string) (string, bool) {
	base := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	abs := strings.HasPrefix(p, "/")
	if abs {
		base += "/root"
	} else {
		base += "/cwd/"
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if c == "" || c == "." {
			continue
		}
		walked := strings.Join(comps[:i+1], "/")
		if abs && (walked == "/proc" || strings.HasPrefix(walked, "/proc/")) {
			return p, false
		}
		var st unix.Stat_t
		if unix.Lstat(base+walked, &st) != nil {
			return p, false
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			continue
		}
		target, err := os.Readlink(base + walked)
		if err != nil || target == "" {
			return p, false
		}
		if !strings.HasPrefix(target, "/") {
			target = strings.Join(comps[:i], "/") + "/" + target
			if !abs && i == 0 {
				target = target[1:]
			}
		}
		if rest := strings.Join(comps[i+1:], "/"); rest != "" {
			target += "/" + rest
		}
		return target, true
	}
	return p, false
}
