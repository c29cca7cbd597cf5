package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/trace"
)

// traceeCmd is the hidden first step of a traced CMD: it waits until the
// tracer follows its pid, then execs CMD (which keeps the pid), so not one
// call of CMD goes unrecorded.
const traceeCmd = "__tracee"

func cmdTrace(args []string) int {
	fl := newFlagSet("trace")
	pid := fl.Int("p", 0, "trace the running process PID (until it exits or SIGINT)")
	out := fl.String("o", "-", "write the trace to FILE (- is stdout)")
	children := fl.Bool("children", false, "also trace the processes the traced ones fork")
	decode := fl.String("decode", "", "print the trace FILE with field names and values, and exit")
	logLevel := fl.String("log-level", "warning", "log level: debug, info, warning, error")
	if status, ok := parseFlags("trace", fl, args); !ok {
		return status
	}
	if *decode != "" {
		if fl.NArg() != 0 {
			return usageLine("trace", "--decode takes no CMD")
		}
		return decodeTrace(*decode)
	}
	switch {
	case *pid < 0:
		return usageLine("trace", fmt.Sprintf("-p %d: want a process id", *pid))
	case *pid == 0 && fl.NArg() == 0:
		return usageLine("trace", "nothing to trace: give -p PID or -- CMD [ARGS...]")
	case *pid != 0 && fl.NArg() != 0:
		return usageLine("trace", "-p PID and a CMD: give one of them")
	}
	if _, err := logrus.ParseLevel(*logLevel); err != nil {
		return usageLine("trace", fmt.Sprintf("--log-level %q: want debug, info, warning or error", *logLevel))
	}
	log, err := (&hostFlags{logLevel: *logLevel}).logger()
	if err != nil {
		return failLine("trace", err)
	}
	w := io.Writer(os.Stdout)
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	sess, err := trace.Start(trace.Options{Children: *children, Out: w, Command: fl.Args(), PID: *pid, Log: log})
	if errors.Is(err, trace.ErrNotPermitted) {
		// What the loader said (EPERM, and a library's hint about
		// RLIMIT_MEMLOCK) helps nobody: the privileges are what is missing.
		return failLine("trace", trace.ErrNotPermitted)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", oneLine(err))
		return 1
	}
	var status int
	if *pid != 0 {
		status = traceRunning(sess, *pid)
	} else {
		status = traceCommand(sess, fl.Args())
	}
	if err := sess.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", oneLine(err))
		return 1
	}
	return status
}

// oneLine keeps the first line of an error (a verifier log can follow).
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// traceCommand runs CMD under the tracer and returns its status.
func traceCommand(sess *trace.Session, argv []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 1
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 1
	}
	// The launcher says on ready it runs, then waits on the gate r.
	readyR, ready, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 1
	}
	defer readyR.Close()
	cmd := exec.Command(self, append([]string{traceeCmd, "--"}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r, ready}
	wait, err := startForwardingSignals(cmd)
	r.Close()
	ready.Close()
	if err != nil {
		w.Close()
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 127
	}
	if err := sess.AddLauncher(cmd.Process.Pid); err != nil {
		w.Close() // the tracee exits without running CMD
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		wait()
		return 1
	}
	readyR.Read(make([]byte, 1)) // a byte, or EOF if it died
	sess.LauncherStarted()
	w.Write([]byte{1})
	w.Close()
	return wait()
}

// traceRunning follows a running process until it exits or the tracer is
// interrupted.
func traceRunning(sess *trace.Session, pid int) int {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "neuronfs trace: process %d: %v\n", pid, err)
		return 1
	}
	defer unix.Close(pfd)
	if err := sess.Add(pid); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	exited := make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(exited)
	}()
	select {
	case <-exited:
	case <-sigs:
	}
	return 0
}

func cmdTracee(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return 2
	}
	ready := os.NewFile(4, "trace-ready")
	ready.Write([]byte{1})
	ready.Close()
	gate := os.NewFile(3, "trace-gate")
	var b [1]byte
	n, _ := gate.Read(b[:])
	gate.Close()
	if n != 1 {
		return 126 // the tracer gave up
	}
	// Worded as run words it (starterr.go).
	path, err := exec.LookPath(args[0])
	if err != nil {
		return reportStartFailureOf("trace", args[0], err)
	}
	err = syscall.Exec(path, args, os.Environ())
	return reportStartFailureOf("trace", path, err)
}

func decodeTrace(path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 1
	}
	defer f.Close()
	t, err := trace.Read(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "neuronfs trace: %s: %v\n", path, err)
		return 1
	}
	if err := trace.Print(os.Stdout, t); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs trace:", err)
		return 1
	}
	return 0
}
