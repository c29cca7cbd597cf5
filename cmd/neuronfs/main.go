// Command neuronfs mounts emulated AWS Neuron devices and runs programs
// against them.
package main

import (
	"fmt"
	"os"
)

const usage = `neuronfs: emulated AWS Neuron devices

Usage:
  neuronfs mount [flags] MOUNTPOINT      serve dev/ and sys/ under MOUNTPOINT until SIGINT/SIGTERM
  neuronfs mount --host [flags]          put /dev/neuronN and the driver's sysfs on this host itself
  neuronfs cleanup [--state-dir DIR]     undo what a killed 'mount --host' left, and dead neuronfs mounts
  neuronfs run [flags] -- CMD [ARGS...]  run CMD with /dev/neuronN and the driver's sysfs in place
  neuronfs ls [--json-output] [--root DIR] list the Neuron devices (works on real hardware too)
  neuronfs top [--root DIR] [--interval D] [--once]
                                         live per-core view of the driver's counters (works on real hardware too)
  neuronfs instances                     list the instance profiles
  neuronfs trace [-p PID | -- CMD [ARGS...]] [-o FILE] [--children]
                                         record every call on /dev/neuron* (eBPF; needs root)
  neuronfs trace --decode FILE           print a trace with field names and values
  neuronfs replay FILE [flags] [--strict] [--map-addresses]
                                         re-issue a trace against emulated devices and compare
  neuronfs help [CMD]                    this text, or a command's flags
  neuronfs version                       the neuronfs build and the emulated driver versions

Exit status: 0 on success, 1 on failure, 2 on a usage error; 'run' and
'trace -- CMD' return CMD's.
`

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// commands are the user-facing commands and the hidden internal steps of
// mount and run (executed in child processes).
func commands() map[string]func([]string) int {
	return map[string]func([]string) int{
		"mount":         cmdMount,
		"run":           cmdRun,
		"instances":     cmdInstances,
		"ls":            cmdLs,
		"top":           cmdTop,
		"cleanup":       cmdCleanup,
		"trace":         cmdTrace,
		"replay":        cmdReplay,
		"help":          cmdHelp,
		"version":       cmdVersion,
		nsRunCmd:        cmdNsRun,
		execCmd:         cmdExec,
		reapCmd:         cmdReap,
		keepCmd:         cmdKeep,
		traceeCmd:       cmdTracee,
		replayCmd:       cmdReplayInside,
		replayWorkerCmd: cmdReplayWorker,
	}
}

// dispatch runs the command args name and returns the exit status.
func dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return cmdHelp(nil)
	case "-version", "--version":
		return cmdVersion(nil)
	}
	f, ok := commands()[args[0]]
	if !ok {
		return unknownCommand("", args[0])
	}
	// 'CMD -h' is a request for help, not a usage error.
	if len(args) == 2 && isHelpFlag(args[1]) {
		return cmdHelp(args[:1])
	}
	return f(args[1:])
}
