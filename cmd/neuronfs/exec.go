package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/neuronfs/neuronfs/hostview"
)

// execCmd is the hidden launcher of CMD under `run`: it installs the
// seccomp filter on itself, sends the listener to the daemon on fd 3,
// drops to the calling user and execs CMD, which keeps the filter (and
// passes it to its children).
const execCmd = "__exec"

// execFlags are the exec helper's flags: the daemon fills them in and
// relays them (args), the helper registers them the same way.
type execFlags struct {
	uid, gid   int
	direct     bool // device descriptors are the supervisor's (fs.Direct)
	noNewPrivs bool // rootless: the filter needs no_new_privs
	view       bool // the filter host view: no mount, the supervisor answers paths
}

func (e *execFlags) register(fl *flag.FlagSet) {
	fl.IntVar(&e.uid, "uid", os.Getuid(), "")
	fl.IntVar(&e.gid, "gid", os.Getgid(), "")
	fl.BoolVar(&e.direct, "direct", false, "")
	fl.BoolVar(&e.noNewPrivs, "no-new-privs", false, "")
	fl.BoolVar(&e.view, "view", false, "")
}

// args is the helper's command line for e.
func (e execFlags) args() []string { return argsOf(e, (*execFlags).register) }

func cmdExec(args []string) int {
	fl := newFlagSet(execCmd)
	var e execFlags
	e.register(fl)
	if err := fl.Parse(args); err != nil || fl.NArg() == 0 {
		return 2
	}
	var err error
	if e.view {
		err = hostview.ExecView(3, e.uid, e.gid, fl.Args(), os.Environ())
	} else {
		err = hostview.Exec(3, e.uid, e.gid, e.direct, e.noNewPrivs, fl.Args(), os.Environ())
	}
	var se *hostview.StartError
	if errors.As(err, &se) {
		return reportStartFailure(se.Name, se.Err)
	}
	fmt.Fprintln(os.Stderr, "neuronfs run:", err)
	return 126
}

// reportStartFailure prints why CMD did not start and returns the status.
func reportStartFailure(name string, err error) int {
	return reportStartFailureOf("run", name, err)
}

// reportStartFailureOf is reportStartFailure for the command cmd (run or
// trace), so both word it the same.
func reportStartFailureOf(cmd, name string, err error) int {
	msg, status := startFailure(name, err)
	fmt.Fprintf(os.Stderr, "neuronfs %s: %s\n", cmd, msg)
	return status
}
