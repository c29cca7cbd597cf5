package main

import (
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

// execCmd is the hidden launcher of CMD under `run`: it installs the
// seccomp filter on itself, sends the listener to the daemon on fd 3,
// drops to the calling user and execs CMD, which keeps the filter (and
// passes it to its children).
const execCmd = "__exec"

func cmdExec(args []string) int {
	fl := newFlagSet(execCmd)
	uid := fl.Int("uid", os.Getuid(), "")
	gid := fl.Int("gid", os.Getgid(), "")
	direct := fl.Bool("direct", false, "")
	noNewPrivs := fl.Bool("no-new-privs", false, "")
	if err := fl.Parse(args); err != nil || fl.NArg() == 0 {
		return 2
	}
	// The filter applies to the thread that installs it, which must be
	// the one that execs.
	goruntime.LockOSThread()
	// Without CAP_SYS_ADMIN (a rootless run) a filter needs no_new_privs;
	// a set-user-ID program gains nothing there anyway, its owner being
	// unmapped or the caller.
	if *noNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "neuronfs run: no_new_privs:", err)
			return 126
		}
	}
	listener, killable, err := chardev.InstallFilter(*direct, ioctl.Magic)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run:", err)
		return 126
	}
	if !killable {
		fmt.Fprintln(os.Stderr, "neuronfs run: warning: this kernel (< 5.19) lets any signal interrupt a device ioctl under --device-fds=supervisor, which may then run twice")
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run: handing over the seccomp listener:", err)
		return 126
	}
	unix.Close(listener)
	unix.Close(3)
	if *uid != os.Geteuid() || *gid != os.Getegid() {
		if err := syscall.Setgroups(nil); err != nil {
			fmt.Fprintln(os.Stderr, "neuronfs run:", err)
			return 126
		}
		if err := syscall.Setresgid(*gid, *gid, *gid); err != nil {
			fmt.Fprintln(os.Stderr, "neuronfs run:", err)
			return 126
		}
		if err := syscall.Setresuid(*uid, *uid, *uid); err != nil {
			fmt.Fprintln(os.Stderr, "neuronfs run:", err)
			return 126
		}
	}
	// CMD is looked up as the user who runs it, after the listener is
	// handed over: a CMD that does not exist or cannot be executed is then
	// the user's mistake, reported here alone, not a failed start.
	path, err := exec.LookPath(fl.Arg(0))
	if err == nil {
		err = syscall.Exec(path, fl.Args(), os.Environ())
		err = &fs.PathError{Op: "exec", Path: path, Err: err}
	}
	return reportStartFailure(fl.Arg(0), err)
}

// reportStartFailure prints why CMD did not start and returns the status.
func reportStartFailure(name string, err error) int {
	msg, status := startFailure(name, err)
	fmt.Fprintln(os.Stderr, "neuronfs run:", msg)
	return status
}
