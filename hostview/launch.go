package hostview

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	goruntime "runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/chardev"
	"github.com/neuronfs/neuronfs/ioctl"
)

// StartError is a command that could not be started: not found, not
// executable. It is the user's mistake, not a failed launch.
type StartError struct {
	Name string
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Exec installs the seccomp filter on the calling thread, sends its
// listener over the socket sock (to the supervisor, see Supervise), drops
// to uid/gid if they differ from the current ids and execs argv with env,
// which keeps the filter (and passes it to its children). direct makes
// the filter catch the supervisor's own descriptors (--device-fds
// supervisor). noNewPrivs sets no_new_privs first, which a filter needs
// without CAP_SYS_ADMIN (a rootless run); a set-user-ID program gains
// nothing there anyway, its owner being unmapped or the caller. It returns
// only on failure: a *StartError when argv itself could not be started.
func Exec(sock, uid, gid int, direct, noNewPrivs bool, argv, env []string) error {
	return execFiltered(sock, uid, gid, noNewPrivs, argv, env, func() (int, bool, error) {
		return chardev.InstallFilter(direct, ioctl.Magic)
	})
}

// ExecView is Exec for run's filter host view (Shadow): no_new_privs
// (the filter is all it installs, with no privilege) and the filter that
// also sends the path calls.
func ExecView(sock, uid, gid int, argv, env []string) error {
	return execFiltered(sock, uid, gid, true, argv, env, func() (int, bool, error) {
		return chardev.InstallViewFilter(ioctl.Magic)
	})
}

func execFiltered(sock, uid, gid int, noNewPrivs bool, argv, env []string, install func() (int, bool, error)) error {
	// The filter applies to the thread that installs it, which must be
	// the one that execs.
	goruntime.LockOSThread()
	if noNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	listener, killable, err := install()
	if err != nil {
		return err
	}
	if !killable {
		fmt.Fprintln(os.Stderr, "neuronfs run: warning: this kernel (< 5.19) lets any signal interrupt a device ioctl under --device-fds=supervisor, which may then run twice")
	}
	if err := unix.Sendmsg(sock, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		return fmt.Errorf("handing over the seccomp listener: %w", err)
	}
	unix.Close(listener)
	unix.Close(sock)
	if uid != os.Geteuid() || gid != os.Getegid() {
		if err := syscall.Setgroups(nil); err != nil {
			return err
		}
		if err := syscall.Setresgid(gid, gid, gid); err != nil {
			return err
		}
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return err
		}
	}
	// The command is looked up as the user who runs it, after the
	// listener is handed over: one that does not exist or cannot be
	// executed is then the user's mistake alone, not a failed launch.
	path, err := exec.LookPath(argv[0])
	if err == nil {
		err = syscall.Exec(path, argv, env)
		err = &fs.PathError{Op: "exec", Path: path, Err: err}
	}
	return &StartError{Name: argv[0], Err: err}
}

// ReceiveFD reads one descriptor passed with SCM_RIGHTS.
func ReceiveFD(sock int) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, 0)
	if err != nil {
		return -1, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("no descriptor received (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, errors.New("no descriptor received")
	}
	return fds[0], nil
}
