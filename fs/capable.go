package fs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// capable reports whether task tid holds capability c the way the
// driver's capable() asks: in the initial user namespace, not the task's
// own. A task has a capability there only if its user namespace is the
// initial one and its effective set has the bit; root of a namespace made
// with `unshare -U -r` has every bit in its own CapEff and none there.
//
// The initial namespace of the emulated host is the daemon's own. As root
// that is the host's; in a rootless run the daemon is root of a user
// namespace of its own, where CMD runs in a nested one, so CMD holds no
// capability the driver checks, as an ordinary user on the host would not.
// A task of an ancestor namespace (a daemon in a container, served to the
// host) is judged without capabilities: stricter than capable().
//
// Both facts are read through one /proc/<tid> directory descriptor, so a
// task that exits in between fails the check instead of its number's
// next owner answering it.
func capable(tid int32, c int) bool {
	own, err := userNS(unix.AT_FDCWD, "/proc/self")
	if err != nil {
		return false
	}
	dir, err := unix.Open(fmt.Sprintf("/proc/%d", tid), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dir)
	ns, err := userNS(dir, ".")
	if err != nil || ns != own {
		return false
	}
	caps, err := effectiveCaps(dir)
	return err == nil && caps&(1<<uint(c)) != 0
}

// userNS identifies the user namespace of the process directory at path
// (relative to dir) by the device and inode of its ns/user.
func userNS(dir int, path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, path+"/ns/user", &st, 0); err != nil {
		return fileID{}, fmt.Errorf("user namespace of %s: %w", path, err)
	}
	return fileID{st.Dev, st.Ino}, nil
}

// effectiveCaps reads CapEff from the status file of the process
// directory dir.
func effectiveCaps(dir int) (uint64, error) {
	fd, err := unix.Openat(dir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open status: %w", err)
	}
	f := os.NewFile(uintptr(fd), "status")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("read status: %w", err)
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("CapEff:")); ok {
			return strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff in status")
}
