package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsRunCmd is the hidden command that runs inside the private mount
// namespace: it serves the devices, builds the view and runs CMD.
const nsRunCmd = "__nsrun"

// userFlags choose whom CMD runs as.
type userFlags struct {
	uid, gid int
}

func (u *userFlags) register(fs *flag.FlagSet) {
	uid, gid := os.Getuid(), os.Getgid()
	// Under sudo the calling user is the one sudo was called by.
	if v, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil {
		uid = v
	}
	if v, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil {
		gid = v
	}
	fs.IntVar(&u.uid, "uid", uid, "user id CMD runs as (default: the calling user)")
	fs.IntVar(&u.gid, "gid", gid, "group id CMD runs as (default: the calling user's)")
}

// check refuses ids no user namespace map or setuid can hold (-1 means
// "unchanged" to the kernel).
func (u *userFlags) check() error {
	for _, f := range []struct {
		name, what string
		id         int
	}{{"--uid", "user", u.uid}, {"--gid", "group", u.gid}} {
		if f.id < 0 || f.id > 1<<32-2 {
			return fmt.Errorf("%s %d: want a %s id from 0 to %d", f.name, f.id, f.what, 1<<32-2)
		}
	}
	return nil
}

// forCaller makes the defaults the caller's own ids, whatever $SUDO_UID
// says: without root, only the caller can be mapped (and CMD sees the ids
// given, while on the host it is always the caller).
func (u *userFlags) forCaller(fl *flag.FlagSet) {
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["uid"] {
		u.uid = os.Getuid()
	}
	if !set["gid"] {
		u.gid = os.Getgid()
	}
}

func cmdRun(args []string) int {
	fl := newFlagSet("run")
	var h hostFlags
	var u userFlags
	h.register(fl)
	u.register(fl)
	noChardev := fl.Bool("no-chardev", false, "make /dev/neuronN the FUSE files instead of character devices with seccomp-redirected opens")
	deviceFDs := defaultDeviceFDs()
	fl.Var(&deviceFDs, "device-fds", "what a device descriptor is: fuse (an open of the FUSE file; mmap needs FUSE passthrough), supervisor (the device's memory file, whose ioctls the seccomp supervisor serves; mmap works on any kernel) or auto (fuse where its mmap works, else supervisor); $"+deviceFDsEnv+" sets the default")
	hostView := registerHostView(fl)
	if status, ok := parseFlags("run", fl, args); !ok {
		return status
	}
	if fl.NArg() == 0 {
		return usageLine("run", "no CMD: neuronfs run [flags] -- CMD [ARGS...]")
	}
	if status, ok := runIfFilterView(fl, &h, &u, *noChardev, deviceFDs, *hostView); ok {
		return status
	}
	// Without root, run makes its namespaces in a user namespace of the
	// caller (rootless.go); --uid and --gid then name the ids CMD sees.
	rootless := os.Geteuid() != 0
	if rootless {
		u.forCaller(fl)
	}
	// The namespace child builds the host; its mistakes are the user's,
	// answered here before anything starts.
	if err := h.check(); err != nil {
		return usageFail("run", err)
	}
	if err := u.check(); err != nil {
		return usageFail("run", err)
	}
	if err := deviceFDs.check(*noChardev && flagSet(fl, "device-fds")); err != nil {
		return usageFail("run", err)
	}
	if err := runPreflight(rootless); err != nil {
		return failLine("run", err)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run:", err)
		return 1
	}
	childArgs := append([]string{nsRunCmd}, h.args()...)
	childArgs = append(childArgs, fmt.Sprintf("--uid=%d", u.uid), fmt.Sprintf("--gid=%d", u.gid), fmt.Sprintf("--no-chardev=%v", *noChardev), "--device-fds="+string(deviceFDs), fmt.Sprintf("--rootless=%v", rootless), "--")
	childArgs = append(childArgs, fl.Args()...)
	cmd := exec.Command(self, childArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A new mount namespace with private propagation: nothing done inside
	// reaches the host, and everything vanishes with the last process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if rootless {
		cmd.SysProcAttr = rootlessNamespaces()
	}
	// The program's keeper (keeper.go) outlives a killed daemon: as the
	// subreaper, run inherits it and waits for it to stop the program.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run: cannot become a subreaper:", err)
		return 1
	}
	// SIGUSR1 asks the serving daemon, the child, for a goroutine dump.
	wait, err := startForwardingSignals(cmd, syscall.SIGUSR1)
	if err != nil {
		if rootless {
			return rootlessStartFailed(&h, &u, *hostView, fl.Args(), err)
		}
		fmt.Fprintln(os.Stderr, "neuronfs run:", err)
		return 1
	}
	status := wait()
	// The daemon handles the signals it is sent: killed, it was killed
	// by something else (SIGKILL, the OOM killer), and the keeper is
	// stopping the program.
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		fmt.Fprintf(os.Stderr, "neuronfs: the daemon died (%v); the program was stopped\n", cmd.ProcessState)
		reapOrphans(orphanBudget)
	}
	return status
}

// flagSet reports whether flag name was given on the command line.
func flagSet(fl *flag.FlagSet, name string) bool {
	set := false
	fl.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runPreflight checks what a mounted run needs, with root or without.
func runPreflight(rootless bool) error {
	if rootless {
		return rootlessPreflight(os.Getuid())
	}
	return preflight()
}

// orphanBudget bounds how long run waits, after its daemon died, for the
// keeper to stop the program: killing and reaping take milliseconds, but
// a process stuck in the kernel cannot be hurried.
const orphanBudget = 10 * time.Second

// reapOrphans waits for the children run inherited as a subreaper, for at
// most budget.
func reapOrphans(budget time.Duration) {
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if errors.Is(err, unix.ECHILD) {
			return
		}
		if pid <= 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// runForwardingSignals runs cmd, passes on the signals a terminal or a
// supervisor sends (and extra), and returns its shell-style status
// (failStatus if it cannot start).
func runForwardingSignals(cmd *exec.Cmd, failStatus int, extra ...os.Signal) int {
	wait, err := startForwardingSignals(cmd, extra...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run:", err)
		return failStatus
	}
	return wait()
}

// startForwardingSignals starts cmd and returns the function that waits
// for its status while passing signals (SIGINT, SIGTERM, SIGHUP and
// extra) on.
func startForwardingSignals(cmd *exec.Cmd, extra ...os.Signal) (func() int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}, extra...)...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return nil, err
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	// The signals stay caught after cmd ends: one passed on to this
	// process just then (run hands a ^C to its daemon while the terminal
	// hands it to CMD, which may already have ended in its handler) must
	// not kill it, which would make its status the signal's, not cmd's.
	return func() int { return exitCode(cmd.Wait()) }, nil
}

// exitCode maps a child's end to a shell-style status.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "neuronfs run:", err)
	return 1
}
