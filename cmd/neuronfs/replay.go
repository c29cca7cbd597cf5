package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
	"github.com/neuronfs/neuronfs/trace/replay"
)

// replayCmd is the hidden half of replay that runs inside `run`, and
// replayWorkerCmd the process it starts per recorded process.
const (
	replayCmd       = "__replay"
	replayWorkerCmd = "__replay-worker"
)

// replayFlags are replay's own flags, which its hidden halves (__replay,
// __replay-worker) register the same way and get relayed (argsOf).
type replayFlags struct {
	strict   bool
	mapAddrs bool
}

func (r *replayFlags) register(fl *flag.FlagSet) {
	fl.BoolVar(&r.strict, "strict", false, "count values rewritten to something other than recorded (handles, physical addresses) as differences, and stop at the first call that differs")
	fl.BoolVar(&r.mapAddrs, "map-addresses", false, "translate physical addresses (chunk PAs, mmap offsets, descriptor addresses) learned from outputs, for captures made on real hardware or another host")
}

func cmdReplay(args []string) int {
	fl := newFlagSet("replay")
	var h hostFlags
	// The host flags, except run's --strict (the daemon's sanitizer):
	// here --strict is about the comparison.
	hfl := flag.NewFlagSet("", flag.ContinueOnError)
	h.register(hfl)
	hfl.VisitAll(func(f *flag.Flag) {
		if f.Name != "strict" {
			fl.Var(f.Value, f.Name, f.Usage)
		}
	})
	var rf replayFlags
	rf.register(fl)
	if status, ok := parseFlags("replay", fl, args); !ok {
		return status
	}
	// The file may come before the flags.
	file := fl.Arg(0)
	if status, ok := parseFlags("replay", fl, fl.Args()[min(1, fl.NArg()):]); !ok {
		return status
	}
	switch {
	case file == "":
		return usageLine("replay", "no FILE: neuronfs replay FILE [flags]")
	case fl.NArg() > 0:
		return usageLine("replay", fmt.Sprintf("unexpected argument %q after FILE", fl.Arg(0)))
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return 1
	}
	t, err := trace.Read(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "neuronfs replay: %s: %v\n", file, err)
		return 1
	}
	// Unless told otherwise, emulate the recorded driver and architecture.
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["driver-version"] && slices.Contains(ioctl.Versions(), t.Header.DriverVersion) {
		h.driver = t.Header.DriverVersion
	}
	if _, err := dhal.LookupInstance(t.Header.Instance); err == nil && !set["instance"] && !set["arch"] {
		h.instance = t.Header.Instance
	} else if !set["instance"] && !set["arch"] {
		if nd, _, _ := strings.Cut(t.Header.Architecture, " "); strings.HasPrefix(nd, "ND") {
			if _, err := parseArch(strings.TrimPrefix(nd, "ND")); err == nil {
				h.arch = strings.TrimPrefix(nd, "ND")
			}
		}
	}
	if err := h.check(); err != nil {
		return usageFail("replay", err)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "neuronfs replay: needs root (it replays inside neuronfs run); try sudo")
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return 1
	}
	runArgs := append([]string{"run"}, relayArgs(hfl, new(hostFlags).register)...)
	runArgs = append(append(runArgs, "--", self, replayCmd), argsOf(rf, (*replayFlags).register)...)
	runArgs = append(runArgs, file)
	cmd := exec.Command(self, runArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return runForwardingSignals(cmd, 1)
}

func cmdReplayInside(args []string) int {
	t, o, file, status := replayArgs(replayCmd, args)
	if t == nil {
		return status
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return 1
	}
	o.Worker = append([]string{self, replayWorkerCmd}, argsOf(replayFlags{mapAddrs: o.MapAddresses}, (*replayFlags).register)...)
	o.Worker = append(o.Worker, file)
	results, err := replay.Run(t, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return 1
	}
	if o.Strict && len(results) > 0 {
		if last := results[len(results)-1]; last.Status == replay.Differ {
			fmt.Fprintf(os.Stderr, "neuronfs replay: call %d (%s) differs: %s\n", last.Seq, last.Call, strings.Join(last.Diffs, "; "))
			return 1
		}
	}
	if err := replay.WriteTable(os.Stdout, results); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return 1
	}
	if replay.Summarize(results).Differ > 0 {
		return 1
	}
	return 0
}

// cmdReplayWorker replays one recorded process for cmdReplayInside, which
// hands it its calls over fd 3.
func cmdReplayWorker(args []string) int {
	t, o, _, status := replayArgs(replayWorkerCmd, args)
	if t == nil {
		return status
	}
	if err := replay.Serve(t, o, os.NewFile(3, "replay sequencer")); err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return 1
	}
	return 0
}

// replayArgs reads the flags and trace of the hidden replay commands; a
// nil trace comes with the exit status.
func replayArgs(name string, args []string) (*trace.Trace, replay.Options, string, int) {
	fl := newFlagSet(name)
	var rf replayFlags
	rf.register(fl)
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 {
		return nil, replay.Options{}, "", 2
	}
	f, err := os.Open(fl.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs replay:", err)
		return nil, replay.Options{}, "", 1
	}
	t, err := trace.Read(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "neuronfs replay: %s: %v\n", fl.Arg(0), err)
		return nil, replay.Options{}, "", 1
	}
	return t, replay.Options{Strict: rf.strict, MapAddresses: rf.mapAddrs}, fl.Arg(0), 0
}
