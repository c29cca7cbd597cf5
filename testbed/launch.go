package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/hostview"
)

// A command's launcher is the test binary re-executed by Command in a
// new mount namespace; it becomes the command before any test code runs.
func init() {
	if sock, name, ok := splitLaunch(os.Args[0]); ok {
		os.Exit(launch(sock, name))
	}
}

// launch builds the host's view from the testbed's mount, installs the
// seccomp filter, hands its listener to the testbed and execs the command;
// it returns only on failure, with a shell's status.
func launch(sock, name string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "testbed: %s: %v\n", name, err)
		return 126
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		return fail(fmt.Errorf("reaching the testbed (has its test ended?): %w", err))
	}
	buf := make([]byte, 1<<20)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return fail(err)
	}
	var cfg launchConfig
	if err := json.Unmarshal(buf[:n], &cfg); err != nil {
		return fail(err)
	}
	if cfg.View {
		argv := append([]string{name}, os.Args[1:]...)
		return startFailed(name, hostview.ExecView(fd, os.Geteuid(), os.Getegid(), argv, controlEnv()))
	}
	if cfg.Rootless {
		mnt, err := hostview.ReceiveFD(fd)
		if err == nil {
			err = attachClone(mnt, cfg.Root)
		}
		if err != nil {
			return fail(err)
		}
	}
	devDir, err := hostview.OverlayDev(cfg.Layout)
	if err != nil {
		return fail(err)
	}
	if err := hostview.Build(cfg.Layout, devDir, cfg.Root, true, cfg.Rootless); err != nil {
		return fail(err)
	}
	argv := append([]string{name}, os.Args[1:]...)
	if cfg.Rootless {
		// On the thread that execs: the command holds no capability.
		runtime.LockOSThread()
		if err := dropCaps(); err != nil {
			return fail(err)
		}
	}
	return startFailed(name, hostview.Exec(fd, os.Geteuid(), os.Getegid(), cfg.Direct, cfg.Rootless, argv, controlEnv()))
}

// controlEnv is the command's environment: this one, with
// $NEURONFS_CONTROL naming the control directory.
func controlEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, hostview.ControlEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, hostview.ControlEnv+"="+hostview.ControlPath)
}

// startFailed reports a command that did not start (err, from Exec) and
// returns a shell's status: 127 not found, else 126.
func startFailed(name string, err error) int {
	var se *hostview.StartError
	if errors.As(err, &se) {
		fmt.Fprintf(os.Stderr, "testbed: %v\n", se.Err)
		if errors.Is(se.Err, exec.ErrNotFound) || errors.Is(se.Err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	fmt.Fprintf(os.Stderr, "testbed: %s: %v\n", name, err)
	return 126
}
