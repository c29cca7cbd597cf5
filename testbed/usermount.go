package testbed

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/exitguard"
)

// Without root the test process may not mount, and, having threads, may
// not enter a user namespace either. So its mounter, the test binary
// re-executed as root of a user namespace of its own (the caller's uid
// and gid mapped to 0, as `neuronfs run` does rootless), mounts the FUSE
// connection in its mount namespace and hands the test process the
// /dev/fuse descriptor to serve. The test process reaches the tree
// through /proc/PID/root of the mounter; a command's launcher, root of
// another user namespace, gets a copy of the mount (open_tree) and
// attaches it in its own mount namespace. Without allow_other, the mount
// serves the caller's user from any namespace.

// mountPrefix starts argv[0] of a mounter; the rest is the mount point.
const mountPrefix = "neuronfs-testbed-mount:"

func init() {
	if dir, ok := strings.CutPrefix(os.Args[0], mountPrefix); ok {
		os.Exit(serveMounts(dir))
	}
}

// userMount is the test process's side of a mounter.
type userMount struct {
	cmd  *exec.Cmd
	sock int // a SOCK_SEQPACKET to the mounter: requests and descriptors
	dir  string
}

// startUserMount starts a mounter for the mount point dir.
func startUserMount(self, dir string) (*userMount, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	theirs := os.NewFile(uintptr(pair[1]), "mounter")
	defer theirs.Close()
	cmd := exec.Command(self)
	cmd.Args = []string{mountPrefix + dir}
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWUSER,
		Unshareflags: syscall.CLONE_NEWNS,
		UidMappings:  []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:  []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:    syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		unix.Close(pair[0])
		return nil, fmt.Errorf("cannot start the mounter in a user namespace (a testbed without root needs one): %w", err)
	}
	return &userMount{cmd: cmd, sock: pair[0], dir: dir}, nil
}

// view is where the test process sees the mount point.
func (m *userMount) view() string {
	return filepath.Join(fmt.Sprintf("/proc/%d/root", m.cmd.Process.Pid), m.dir)
}

// ask sends one request and returns the descriptor answered.
func (m *userMount) ask(req string) (int, error) {
	if _, err := unix.Write(m.sock, []byte(req)); err != nil {
		return -1, fmt.Errorf("mounter: %w", err)
	}
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(m.sock, buf, oob, 0)
	if err != nil {
		return -1, fmt.Errorf("mounter: %w", err)
	}
	if n > 0 && buf[0] != 0 {
		return -1, fmt.Errorf("%s", buf[:n]) // the mounter's reason
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("mounter: no descriptor (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("mounter: no descriptor (%v)", err)
	}
	return fds[0], nil
}

// mount has the mounter mount FUSE with opts and returns its descriptor
// (fs.Options.Mount).
func (m *userMount) mount(opts []string) (int, error) {
	return m.ask("mount " + strings.Join(opts, ","))
}

// clone returns a detached copy of the mount, for a launcher to attach.
func (m *userMount) clone() (int, error) { return m.ask("clone") }

// close ends the mounter: its mount namespace, and the mount, go with it.
func (m *userMount) close() error {
	unix.Close(m.sock)
	err := m.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 0 {
		return nil
	}
	return err
}

// serveMounts is the mounter: it answers requests on descriptor 3 until
// the test process closes it.
func serveMounts(dir string) int {
	const sock = 3
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(sock, buf)
		if err != nil || n == 0 {
			return 0
		}
		var fd int
		req, arg, _ := strings.Cut(string(buf[:n]), " ")
		switch req {
		case "mount":
			fd, err = mountHere(dir, arg)
		case "clone":
			fd, err = unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		default:
			err = fmt.Errorf("unknown request %q", req)
		}
		if err != nil {
			unix.Write(sock, []byte(fmt.Sprintf("mounter: %s: %v", req, err)))
			continue
		}
		err = unix.Sendmsg(sock, []byte{0}, unix.UnixRights(fd), nil, 0)
		unix.Close(fd)
		if err != nil {
			return 1
		}
	}
}

// mountHere mounts FUSE at dir, owned by this namespace's root (the
// caller on the host), and returns the /dev/fuse descriptor.
func mountHere(dir, opts string) (int, error) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/fuse: %w", err)
	}
	all := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,%s", fd, opts)
	if err := unix.Mount("neuronfs", dir, "fuse.neuronfs", unix.MS_NOSUID|unix.MS_NODEV, all); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount %s: %w", dir, err)
	}
	return fd, nil
}

// attachClone attaches a mount copy (userMount.clone) at dir, in a
// launcher's own mount namespace.
func attachClone(fd int, dir string) error {
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching the testbed's mount at %s: %w", dir, err)
	}
	return nil
}

// asCaller starts a launcher as the root of a user namespace of its own
// that maps the caller's ids to themselves, with the capabilities the
// host's view needs: the command it becomes sees the caller's ids, and
// drops them (dropCaps) before it runs.
func asCaller() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWUSER,
		Unshareflags: syscall.CLONE_NEWNS,
		UidMappings:  []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings:  []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		AmbientCaps:  []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_CHOWN, unix.CAP_MKNOD},
		Pdeathsig:    syscall.SIGKILL,
	}
}

// dropCaps clears the calling thread's ambient capabilities, so the
// program it execs holds none.
func dropCaps() error {
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
}

// guardMount registers the host's mount with the exit guard: the mount
// itself, or, mounted by a mounter, the mounter, whose death takes its
// mount namespace and the mount.
func (tb *Testbed) guardMount() (exitguard.Reg, error) {
	if tb.um != nil {
		return tb.guard.Process(tb.um.cmd.Process.Pid)
	}
	return tb.guard.Mount(tb.root)
}

// mountHost mounts sys at dir: from this process as root, else through
// a mounter (um); at is where this process sees the mount.
func mountHost(sys *device.System, self, dir string, o fs.Options) (fsys *fs.FS, at string, um *userMount, err error) {
	at = dir
	if os.Geteuid() != 0 {
		if um, err = startUserMount(self, dir); err != nil {
			return nil, "", nil, err
		}
		o.Mount, o.Unmount, at = um.mount, um.close, um.view()
	}
	if fsys, err = fs.Mount(sys, at, o); err != nil && um != nil {
		um.close()
	}
	return fsys, at, um, err
}

// sendClone hands a launcher a copy of the mount.
func (tb *Testbed) sendClone(conn *net.UnixConn) error {
	fd, err := tb.um.clone()
	if err != nil {
		tb.log.WithError(err).Error("a copy of the mount for a command")
		return err
	}
	defer unix.Close(fd)
	_, _, err = conn.WriteMsgUnix([]byte{0}, unix.UnixRights(fd), nil)
	return err
}
