package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

// answersInOneLine checks the answer to a command-line mistake: nothing
// on standard output, exit status 2, one line on standard error naming
// the mistake (with want in it), then at most a pointer to the command's
// help; no log record, no flag list.
func answersInOneLine(t *testing.T, args []string, stdout, stderr string, status int, want string) {
	t.Helper()
	cmd, prefix, pointer := args[0], "neuronfs "+args[0]+": ", "see 'neuronfs help "+args[0]+"'"
	if _, ok := commandHelp[cmd]; !ok {
		prefix, pointer = "neuronfs: ", "see 'neuronfs help'"
	}
	if cmd == "help" {
		pointer = "see 'neuronfs help'"
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	ok := status == exitUsage && stdout == "" && strings.HasSuffix(stderr, "\n") &&
		strings.HasPrefix(lines[0], prefix) && strings.Contains(lines[0], want) &&
		(len(lines) == 1 || len(lines) == 2 && lines[1] == pointer) &&
		!strings.Contains(stderr, "level=") && !strings.Contains(stderr, "Usage")
	if !ok {
		t.Errorf("neuronfs %q: status %d, stdout %q, stderr %q; want 2 and one line %q... with %q (then %q)", args, status, stdout, stderr, prefix, want, pointer)
	}
}

const sampleTrace = "testdata/traces/bringup-trn2.3xlarge.jsonl"

// Every mistake on the command line is answered in one line and exit 2.
func TestMistakesAreOneLine(t *testing.T) {
	hostFlagMistakes := []struct {
		flags []string
		want  string
	}{
		{[]string{"--instance", "trn2.32xlarge"}, `unknown instance "trn2.32xlarge" (known: inf2.xlarge, inf2.8xlarge, inf2.24xlarge, inf2.48xlarge, trn1.2xlarge`},
		{[]string{"--devices", "40"}, "--devices 40: trn2."},
		{[]string{"--devices", "-1"}, "--devices -1"},
		{[]string{"--devices=x"}, `--devices "x": want a whole number`},
		{[]string{"--driver-version", "2.26.0.0"}, `unknown driver version "2.26.0.0" (known: 2.29.0.0`},
		{[]string{"--instance", "trn3.48xlarge", "--driver-version", "2.20.28.0"}, "--driver-version 2.20.28.0 does not support Trn3"},
		{[]string{"--inject", "bogus"}, `--inject: unknown fault "bogus" (want alloc-fail`},
		{[]string{"--inject", "ecc-hbm"}, `fault "ecc-hbm" needs a value`},
		{[]string{"--inject", "reset-fail,ecc-sram=x"}, `fault "ecc-sram=x": want a count`},
		{[]string{"--nosuch"}, "unknown flag --nosuch"},
		{[]string{"--debug-fuse=maybe"}, `--debug-fuse "maybe": want true or false`},
		{[]string{"--exec-latency", "soon"}, `--exec-latency "soon": want a duration`},
		{[]string{"--time-scale", "0"}, "--time-scale 0: want a positive factor"},
		{[]string{"--exec-trace", "/nonexistent-neuronfs-dir/exec.json"}, "--exec-trace /nonexistent-neuronfs-dir/exec.json: no directory"},
		{[]string{"--log-file", "/nonexistent-neuronfs-dir/logs/daemon.log"}, "--log-file /nonexistent-neuronfs-dir/logs/daemon.log: no directory"},
		{[]string{"--arch", "v9"}, `--arch: unknown architecture "v9"`},
		{[]string{"--arch", "v2", "--instance", "trn2.48xlarge"}, "--arch v2: trn2.48xlarge is v3"},
		{[]string{"--log-level", "loud"}, `--log-level "loud": want debug, info, warning or error`},
		{[]string{"--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"--memory-limit", "0"}, "--memory-limit"},
		{[]string{"--memory-backing", "tape"}, "--memory-backing"},
		{[]string{"--fuse-transport", "pigeon"}, `--fuse-transport "pigeon": want auto, uring or classic`},
		{[]string{"--pod", "p"}, "--pod needs an UltraServer instance"},
		{[]string{"--pod", "p", "--instance", "trn2u.48xlarge"}, "--pod needs --node-serial"},
		{[]string{"--pod", "p", "--instance", "trn2u.48xlarge", "--node-serial", "7", "--pod-size", "3"}, "--pod-size 3: want 2 or 4"},
		{[]string{"--pod-link-fault", "middle"}, `--pod-link-fault "middle"`},
	}
	var cases []struct {
		args []string
		want string
	}
	add := func(want string, args ...string) {
		cases = append(cases, struct {
			args []string
			want string
		}{args, want})
	}
	for _, m := range hostFlagMistakes {
		add(m.want, append(append([]string{"run"}, m.flags...), "--", "true")...)
		add(m.want, append(append([]string{"mount"}, m.flags...), "/nonexistent")...)
		add(m.want, append([]string{"mount", "--host"}, m.flags...)...)
		add(m.want, append([]string{"replay", sampleTrace}, m.flags...)...)
	}
	add("no CMD", "run")
	add("--devices needs a value", "run", "--devices")
	add("--devices needs a value", "mount", "--host", "--devices")
	add("--devices 40: trn2.48xlarge takes 1 to 16", "run", "--devices", "40", "--", "true")
	add("unknown flag --uid2", "run", "--uid2=3", "--", "true")
	add("--uid -1: want a user id from 0 to 4294967294", "run", "--uid=-1", "--", "true")
	add("--gid 4294967295: want a group id from 0 to 4294967294", "run", "--gid=4294967295", "--", "true")
	add("want one MOUNTPOINT", "mount")
	add("want one MOUNTPOINT", "mount", "a", "b")
	add("--host takes no MOUNTPOINT", "mount", "--host", "/mnt")
	add("unknown flag --state", "cleanup", "--state", "x")
	add(`unexpected argument "now"`, "cleanup", "now")
	add("unknown flag --json", "ls", "--json")
	add(`unexpected argument "0"`, "ls", "0")
	add("unknown flag --interval2", "top", "--interval2", "1s")
	add(`--interval "fast": want a duration`, "top", "--interval", "fast")
	add("--interval -1s: want a positive duration", "top", "--interval", "-1s")
	add(`unexpected argument "x"`, "top", "x")
	add("nothing to trace", "trace")
	add("-p PID and a CMD", "trace", "-p", "1", "--", "true")
	add("-p -5: want a process id", "trace", "-p", "-5")
	add(`-p "me": want a whole number`, "trace", "-p", "me")
	add("unknown flag --child", "trace", "--child", "--", "true")
	add(`--log-level "loud"`, "trace", "--log-level", "loud", "--", "true")
	add("no FILE", "replay")
	add("unknown flag --strictly", "replay", sampleTrace, "--strictly")
	add(`unexpected argument "more"`, "replay", sampleTrace, "more")
	add("takes no arguments", "instances", "--all")
	add("takes no arguments", "version", "--short")
	add(`unknown command "runn" (known: cleanup, help, instances, ls, mount, replay, run`, "help", "runn")
	add("one command at a time", "help", "run", "mount")
	add(`unknown command "runn" (known: cleanup`, "runn", "--", "true")
	add(`unknown command "--instance"`, "--instance", "x")
	for _, c := range cases {
		stdout, stderr, status := inProcess(t, c.args...)
		answersInOneLine(t, c.args, stdout, stderr, status, c.want)
	}
	// Through main and os.Exit too.
	for _, c := range cases[:4] {
		stdout, stderr, status := cli(t, c.args...)
		answersInOneLine(t, c.args, stdout, stderr, status, c.want)
	}
}

// 'help CMD' and 'CMD -h' print the command's text and its flags, named
// as documented, on standard output: no 'Usage of CMD:' header.
func TestHelpIsClean(t *testing.T) {
	for cmd := range commandHelp {
		out, errOut, status := inProcess(t, "help", cmd)
		if status != 0 || errOut != "" || !strings.HasPrefix(out, "usage: neuronfs "+cmd) || strings.Contains(out, "Usage") {
			t.Errorf("help %s: status %d, stderr %q, stdout %q", cmd, status, errOut, out)
		}
		if flagless[cmd] {
			if strings.Contains(out, "flags:") {
				t.Errorf("help %s lists flags: %q", cmd, out)
			}
			continue
		}
		if _, flags, ok := strings.Cut(out, "\nflags:\n"); !ok || !strings.HasPrefix(flags, "  -") || strings.Contains(flags, "\n  -arch") {
			t.Errorf("help %s: flags %q", cmd, flags)
		}
		if dash, _, _ := inProcess(t, cmd, "-h"); dash != out {
			t.Errorf("%s -h prints %q, help %s %q", cmd, dash, cmd, out)
		}
	}
	if out, _, _ := inProcess(t, "help", "run"); !strings.Contains(out, "\n  --instance string\n") || !strings.Contains(out, "(default warning)") {
		t.Errorf("help run: %q", out)
	}
	// run's help shows how it is used, and where its faults file is.
	out, _, _ := inProcess(t, "help", "run")
	_, inject, _ := strings.Cut(out, "\n  --inject string\n")
	inject, _, _ = strings.Cut(inject, "\n  --")
	if !strings.Contains(out, "\nexamples:\n  neuronfs run ") || !strings.Contains(inject, "$NEURONFS_CONTROL") || strings.Contains(inject, "MOUNT/neuronfs/faults") {
		t.Errorf("help run: no examples, or --inject names the wrong faults file: %q", out)
	}
}

// instances lists the profiles in family and size order, and counts in
// the singular where there is one device.
func TestInstancesList(t *testing.T) {
	out, errOut, status := inProcess(t, "instances")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var names []string
	for _, l := range lines {
		names = append(names, strings.Fields(l)[0])
	}
	if status != 0 || errOut != "" || !slices.Equal(names, dhal.InstanceNames()) ||
		!slices.Equal(names[:4], []string{"inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge"}) {
		t.Fatalf("instances: status %d, stderr %q, names %q", status, errOut, names)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if want := map[bool]string{true: "device", false: "devices"}[f[3] == "1"]; f[4] != want {
			t.Errorf("instances line %q: %q after %s", l, f[4], f[3])
		}
	}
}
