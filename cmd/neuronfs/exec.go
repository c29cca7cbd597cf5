package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/neuronfs/neuronfs/hostview"
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
	view := fl.Bool("view", false, "")
	if err := fl.Parse(args); err != nil || fl.NArg() == 0 {
		return 2
	}
	var err error
	if *view {
		err = hostview.ExecView(3, *uid, *gid, fl.Args(), os.Environ())
	} else {
		err = hostview.Exec(3, *uid, *gid, *direct, *noNewPrivs, fl.Args(), os.Environ())
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
	msg, status := startFailure(name, err)
	fmt.Fprintln(os.Stderr, "neuronfs run:", msg)
	return status
}
