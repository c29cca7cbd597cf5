package replay

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A trace is untrusted input (it arrives with bug reports), and replay
// runs as root: what it opens is decided here, never by the trace. It
// opens only the emulated device nodes, /dev/neuronN of the `run` it
// replays in, and checks after the open that the descriptor is one.

// nodePolicy says where the device nodes are and how an opened one is
// checked. Tests point it elsewhere; replays use defaultNodes.
type nodePolicy struct {
	dir string // the directory holding neuronN
	// open opens a node (unix.Open; a fuzzer watches what is opened).
	open func(path string, flags int) (int, error)
	// verify checks that fd, opened as minor, is an emulated device node.
	verify func(fd, minor int) error
}

func defaultNodes() *nodePolicy {
	return &nodePolicy{dir: "/dev", open: openNode, verify: verifyNode}
}

func openNode(path string, flags int) (int, error) { return unix.Open(path, flags, 0) }

// maxMinor bounds the N of neuronN: far above any instance's devices,
// low enough that the name can not overflow anything.
const maxMinor = 1 << 16

// minor returns the N of a path that is exactly DIR/neuronN, with N in
// canonical decimal; anything else (another file, "..", a second slash,
// a leading zero, a suffix) is not a device node.
func (p *nodePolicy) minor(path string) (int, bool) {
	digits, ok := strings.CutPrefix(path, p.dir+"/neuron")
	if !ok || digits == "" || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n >= maxMinor {
		return 0, false
	}
	return n, true
}

// allowedOpenFlags are what replay passes of a recorded open's flags: the
// access mode and O_NONBLOCK (what a device's calls depend on). O_CLOEXEC
// is always added (the worker's exec replay closes what the recording's
// exec closed), and O_NOFOLLOW: a node is never a symlink.
const allowedOpenFlags = unix.O_ACCMODE | unix.O_NONBLOCK

// openFlags returns the flags replay opens a device with, and the
// recorded ones it drops (O_CREAT, O_TRUNC, O_APPEND, ...).
func openFlags(recorded uint64) (flags int, dropped uint64) {
	dropped = recorded &^ (allowedOpenFlags | unix.O_CLOEXEC)
	return int(recorded&allowedOpenFlags) | unix.O_CLOEXEC | unix.O_NOFOLLOW, dropped
}

// verifyNode checks an opened node: under `run` a device descriptor's
// fstat is the supervisor's answer, a character device of the neuron
// major (/proc/devices) and minor N; with --no-chardev the node is the
// FUSE mount's regular file.
func verifyNode(fd, minor int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		major, err := neuronMajor("/proc/devices")
		if err != nil {
			return err
		}
		if unix.Major(st.Rdev) != major || int(unix.Minor(st.Rdev)) != minor {
			return fmt.Errorf("character device %d:%d, not neuron's %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev), major, minor)
		}
		return nil
	case unix.S_IFREG:
		var fs unix.Statfs_t
		if err := unix.Fstatfs(fd, &fs); err != nil {
			return fmt.Errorf("fstatfs: %w", err)
		}
		if fs.Type != unix.FUSE_SUPER_MAGIC {
			return fmt.Errorf("a regular file on filesystem %#x, not the FUSE mount's", fs.Type)
		}
		return nil
	}
	return fmt.Errorf("file type %#o, not a device node", st.Mode&unix.S_IFMT)
}

// neuronMajor reads the neuron character major from a /proc/devices text.
func neuronMajor(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	chars := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasSuffix(line, ":"):
			chars = line == "Character devices:"
		case chars:
			num, name, _ := strings.Cut(line, " ")
			if strings.TrimSpace(name) == "neuron" {
				n, err := strconv.ParseUint(num, 10, 32)
				if err != nil {
					return 0, fmt.Errorf("%s: neuron major %q: %w", path, num, err)
				}
				return uint32(n), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return 0, errors.New(path + " lists no neuron character device")
}
