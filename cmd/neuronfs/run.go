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

// cmdRun starts the emulated host in a private mount namespace (the
// __nsrun child, which serves the devices and runs CMD) and waits for it.
// Its steps, in order, are the functions below it.
func cmdRun(args []string) int {
	fl := newFlagSet("run")
	var r runFlags
	r.register(fl)
	// Not relayed: the namespace child only ever mounts.
	hostView := registerHostView(fl)
	rootless, status, ok := parseRunFlags(fl, &r, args)
	if !ok {
		return status
	}
	// The daemon logs to a file, never into CMD's streams (logfile.go).
	daemonLog, err := runLogFile(r.host.logFile.path, r.host.logLevel, r.host.debug)
	if err != nil {
		return failLine("run", err)
	}
	r.host.logFile.path = daemonLog.path
	defer daemonLog.report()
	if status, ok := runIfFilterView(fl, &r.host, &r.user, r.noChardev, r.deviceFDs, *hostView); ok {
		return status
	}
	if err := runPreflight(rootless); err != nil {
		return failLine("run", err)
	}
	cmd, err := nsRunCommand(fl, rootless)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run:", err)
		return 1
	}
	// The program's keeper (keeper.go) outlives a killed daemon: as the
	// subreaper, run inherits it and waits for it to stop the program.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run: cannot become a subreaper:", err)
		return 1
	}
	// A container may refuse the user namespace only when it is made:
	// then auto serves through the filter view instead (hostviewflag.go).
	return runDaemon(cmd, rootless, func(err error) int {
		return rootlessStartFailed(&r.host, &r.user, *hostView, fl.Args(), err)
	})
}

// parseRunFlags parses run's command line and answers the user's
// mistakes before anything starts (the namespace child, which builds the
// host, would only find them later). It reports whether run is rootless;
// when ok is false, run is over with status.
func parseRunFlags(fl *flag.FlagSet, r *runFlags, args []string) (rootless bool, status int, ok bool) {
	if status, ok := parseFlags("run", fl, args); !ok {
		return false, status, false
	}
	if fl.NArg() == 0 {
		return false, usageLine("run", "no CMD: neuronfs run [flags] -- CMD [ARGS...]"), false
	}
	// Without root, run makes its namespaces in a user namespace of the
	// caller (rootless.go); --uid and --gid then name the ids CMD sees.
	rootless = os.Geteuid() != 0
	if rootless {
		r.user.forCaller(fl)
	}
	explicit := false
	fl.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "device-fds" })
	for _, check := range []func() error{r.host.check, r.user.check, func() error { return r.deviceFDs.check(r.noChardev && explicit) }} {
		if err := check(); err != nil {
			return false, usageFail("run", err), false
		}
	}
	return rootless, exitOK, true
}

// runPreflight checks that this host can make run's namespaces and mount.
func runPreflight(rootless bool) error {
	if rootless {
		return rootlessPreflight(os.Getuid())
	}
	return preflight()
}

// nsRunCommand is the namespace child's command: run's parsed flags
// relayed, then CMD.
func nsRunCommand(fl *flag.FlagSet, rootless bool) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	childArgs := append([]string{nsRunCmd}, relayArgs(fl, new(runFlags).register)...)
	childArgs = append(childArgs, fmt.Sprintf("--rootless=%v", rootless), "--")
	childArgs = append(childArgs, fl.Args()...)
	cmd := exec.Command(self, childArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A new mount namespace with private propagation: nothing done inside
	// reaches the host, and everything vanishes with the last process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if rootless {
		cmd.SysProcAttr = rootlessNamespaces()
	}
	return cmd, nil
}

// runDaemon starts the namespace child, waits for it and returns its
// status, stopping orphans if it was killed.
func runDaemon(cmd *exec.Cmd, rootless bool, rootlessFailed func(error) int) int {
	// SIGUSR1 asks the serving daemon, the child, for a goroutine dump.
	wait, err := startForwardingSignals(cmd, syscall.SIGUSR1)
	if err != nil {
		if e := reexecError(cmd.Path, err); e != nil {
			return failLine("run", e)
		}
		if rootless {
			return rootlessFailed(err)
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
