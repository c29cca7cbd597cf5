package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// keepCmd is the hidden command of the keeper: under `run`, the daemon
// starts CMD through it. The keeper is a child subreaper, so CMD and
// every descendant, double-forked daemons included, stay in its subtree;
// when the daemon dies (SIGKILLed itself, or by its death signal when run
// is), nothing answers their seccomp filter any more (their opens would
// fail with ENOSYS), so the keeper kills them all. When CMD ends, what it
// left running goes too: its supervisor ends with run.
//
// A PID namespace would give the same guarantee, but CMD would then see
// pids the driver (which identifies callers by their host tgid) does not
// use, in ioctls that carry a pid and in /proc.
const keepCmd = "__keep"

// keeperPoll is how often the keeper checks that the daemon still runs,
// besides waiting for the end of its pipe (see watchDaemon).
const keeperPoll = 100 * time.Millisecond

// How the keeper starts its child.
const (
	keepAsIs   = "as-is"  // as the keeper runs
	keepUserns = "userns" // in a nested user namespace (asUserInside)
	keepCred   = "cred"   // with --uid and --gid set (setuid)
)

// startKept starts argv under a keeper: files become the child's fds 3
// and on. The keeper watches the daemon (this process) through a pipe
// whose only writer stays here until the daemon exits.
func startKept(argv []string, as string, uid, gid int, files ...*os.File) (func() int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("the keeper's pipe: %w", err)
	}
	defer r.Close()
	k := keepFlags{as: as, uid: uid, gid: gid, files: len(files), pgid: unix.Getpgrp()}
	args := append(append([]string{keepCmd}, argsOf(k, (*keepFlags).register)...), "--")
	args = append(args, argv...)
	cmd := exec.Command(self, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = append([]*os.File{r}, files...)
	// The keeper has a process group of its own, so a SIGKILL sent to
	// run's group (a CI timeout) does not reach it, and it stops what of
	// CMD's tree the signal missed (setsid daemons). CMD goes back to
	// run's group, for the terminal's job control.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	wait, err := startForwardingSignals(cmd)
	if err != nil {
		w.Close()
		return nil, err
	}
	return func() int {
		defer w.Close() // keeps w reachable (and open) until CMD ends
		return wait()
	}, nil
}

// keepFlags are the keeper's flags: startKept fills them in and derives
// the keeper's command line from them (argsOf).
type keepFlags struct {
	as       string // keepAsIs, keepUserns or keepCred
	uid, gid int
	files    int // descriptors passed on to the child, from fd 4
	pgid     int // the process group the child joins (0: its own)
}

func (k *keepFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&k.as, "as", keepAsIs, "")
	fl.IntVar(&k.uid, "uid", os.Getuid(), "")
	fl.IntVar(&k.gid, "gid", os.Getgid(), "")
	fl.IntVar(&k.files, "files", 0, "")
	fl.IntVar(&k.pgid, "pgid", 0, "")
}

func cmdKeep(args []string) int {
	fl := newFlagSet(keepCmd)
	var k keepFlags
	k.register(fl)
	if err := fl.Parse(args); err != nil || fl.NArg() == 0 {
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs run: cannot become the program's subreaper:", err)
		return 126
	}
	daemon := os.Getppid()
	pipe := os.NewFile(3, "daemon")
	var files []*os.File
	for i := 0; i < k.files; i++ {
		files = append(files, os.NewFile(uintptr(4+i), "file"+strconv.Itoa(i)))
	}
	cmd := exec.Command(fl.Arg(0), fl.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	switch k.as {
	case keepUserns:
		cmd.SysProcAttr = asUserInside(k.uid, k.gid)
	case keepCred:
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(k.uid), Gid: uint32(k.gid)}
	}
	if k.pgid > 0 {
		cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, k.pgid
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	err := cmd.Start()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return reportStartFailure(fl.Arg(0), err)
	}
	go func() {
		for s := range sigs {
			if s == syscall.SIGINT && inForeground(cmd.Process.Pid) {
				continue // the terminal's ^C reached CMD itself
			}
			cmd.Process.Signal(s)
		}
	}()
	go func() {
		watchDaemon(pipe, daemon)
		// Nothing serves the program's devices any more.
		killDescendants()
	}()
	status := reapUntil(cmd.Process.Pid)
	stopDescendants() // signals stay caught, as in startForwardingSignals
	return status
}

// watchDaemon returns when the daemon is gone: its end of the pipe closes
// when it exits, but a daemon killed while one of its own files waits on
// its mount may hold it long after its threads are gone, so its state is
// also watched (as the mount reaper does, daemonExiting).
func watchDaemon(pipe *os.File, daemon int) {
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, pipe)
		close(closed)
	}()
	tick := time.NewTicker(keeperPoll)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-tick.C:
			if daemonExiting(daemon) {
				return
			}
		}
	}
}

// reapUntil reaps this subreaper's children, orphans handed to it
// included, until pid ends, and returns pid's shell-style status.
func reapUntil(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "neuronfs run: waiting for the program:", err)
			return 1
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// stopDescendants kills whatever is left under the keeper and reaps it.
// A process forking meanwhile leaves an orphan that comes to the keeper,
// found by the next round; the rounds end when no child is left.
func stopDescendants() {
	for {
		killDescendants()
		if _, err := unix.Wait4(-1, nil, 0, nil); errors.Is(err, unix.ECHILD) {
			return
		}
	}
}

// killDescendants sends SIGKILL to every process under this one.
func killDescendants() {
	for _, d := range descendants(os.Getpid()) {
		d.kill()
	}
}

// inForeground reports whether pid's process group is the foreground job
// of the terminal on this process's standard input. A ^C there reaches
// CMD from the terminal, and the copy run passes on would be a second
// SIGINT: a program that ends in its handler could die of the second one
// (the shell that exits in its INT trap did, one run in a few).
func inForeground(pid int) bool {
	pg, err := unix.Getpgid(pid)
	if err != nil {
		return false
	}
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && fg == pg
}
