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
  neuronfs run [flags] -- CMD [ARGS...]  run CMD with /dev/neuronN and the driver's sysfs in place
  neuronfs ls [--json-output] [--root DIR] list the Neuron devices (works on real hardware too)
  neuronfs instances                     list the instance profiles
  neuronfs trace [-p PID | -- CMD [ARGS...]] [-o FILE] [--children]
                                         record every call on /dev/neuron* (eBPF; needs root)
  neuronfs trace --decode FILE           print a trace with field names and values
  neuronfs replay FILE [flags] [--strict] re-issue a trace against emulated devices and compare

Run 'neuronfs mount -h' or 'neuronfs run -h' for the flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmds := map[string]func([]string) int{
		"mount":     cmdMount,
		"run":       cmdRun,
		"instances": cmdInstances,
		"ls":        cmdLs,
		"trace":     cmdTrace,
		"replay":    cmdReplay,
		// Internal steps of mount and run, executed in child processes.
		nsRunCmd:  cmdNsRun,
		execCmd:   cmdExec,
		reapCmd:   cmdReap,
		traceeCmd: cmdTracee,
		replayCmd: cmdReplayInside,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		if os.Args[1] != "-h" && os.Args[1] != "--help" && os.Args[1] != "help" {
			fmt.Fprintf(os.Stderr, "neuronfs: unknown command %q\n\n", os.Args[1])
		}
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	os.Exit(f(os.Args[2:]))
}
