package main

import (
	"fmt"
	"os"
)

// Exit statuses shared by every command (run returns its CMD's instead).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// commandHelp is what 'neuronfs help CMD' prints above the command's flags.
var commandHelp = map[string]string{
	"mount": `usage: neuronfs mount [flags] MOUNTPOINT
       neuronfs mount --host [flags]

Serves dev/neuronN and the driver's sysfs tree under MOUNTPOINT until
SIGINT or SIGTERM. With --host, mounts the tree privately under --state-dir
and binds /dev/neuronN, /sys/class/neuron_device,
/sys/devices/virtual/neuron_device and /sys/module/neuron onto this host, so
containers can use them; every bind is undone on exit ('neuronfs cleanup'
after a SIGKILL). SIGUSR1 writes every goroutine's stack to the log, and so
does reading MOUNTPOINT/neuronfs/goroutines (root).`,
	"cleanup": `usage: neuronfs cleanup [--state-dir DIR]

Undoes the binds and the mount of a 'mount --host' daemon that is gone
(its state file is in --state-dir), and detaches every neuronfs FUSE mount
whose daemon has died.`,
	"run": `usage: neuronfs run [flags] -- CMD [ARGS...]

Runs CMD in a private mount namespace with /dev/neuronN and the driver's
sysfs at their real paths. The exit status is CMD's. Without root it works
in a user namespace of the caller, where unprivileged user namespaces are
allowed and /dev/fuse is usable; CMD then runs as the caller. The daemon's
log goes to a file (--log-file), never into CMD's output; run names it when
CMD ends if it holds a warning. SIGUSR1 makes the serving daemon write every
goroutine's stack to that log.

examples:
  neuronfs run -- ls -l /dev/neuron0                the 16 devices of a trn2.48xlarge
  neuronfs run --instance inf2.xlarge -- ./my-tests
  neuronfs run --inject reset-fail -- ./my-tests    faults from the start
  neuronfs run -- sh -c 'echo dma-abort > "$NEURONFS_CONTROL/faults" && ./my-tests'
  sudo neuronfs run --uid 0 --gid 0 -- ./my-tests   CMD as root, so it may write faults`,
	"ls": `usage: neuronfs ls [--json-output] [--root DIR]

Lists the Neuron devices, as the vendor's neuron-ls does.`,
	"top": `usage: neuronfs top [--root DIR] [--interval D] [--once]

Shows, per device and core, memory by category, inference and error
counts, resets and utilisation, from the driver's sysfs counters. On a
terminal it refreshes in place until 'q'; otherwise it prints a snapshot
per interval (one with --once).`,
	"instances": `usage: neuronfs instances

Lists the EC2 instance profiles that --instance takes.`,
	"trace": `usage: neuronfs trace [-p PID | -- CMD [ARGS...]] [-o FILE] [--children]
       neuronfs trace --decode FILE

Records every call on /dev/neuron* with eBPF (root), or decodes a trace.`,
	"replay": `usage: neuronfs replay FILE [flags] [--strict] [--map-addresses]

Re-issues a trace against emulated devices and compares the answers.`,
	"help": `usage: neuronfs help [CMD]

Prints the command list, or a command's description and flags.`,
	"version": `usage: neuronfs version   (or neuronfs --version)

Prints the neuronfs build and the driver versions it can emulate.`,
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// flagless are the commands that take no flags: their help is the text.
var flagless = map[string]bool{"help": true, "version": true, "instances": true}

func cmdHelp(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stdout, usage)
		return exitOK
	}
	if len(args) > 1 {
		return usageLine("help", "one command at a time")
	}
	if _, ok := commandHelp[args[0]]; !ok {
		return unknownCommand("help", args[0])
	}
	if flagless[args[0]] {
		printCommandHelp(args[0], nil)
		return exitOK
	}
	// The command prints its own description and flags on -h.
	return commands()[args[0]]([]string{"-h"})
}
