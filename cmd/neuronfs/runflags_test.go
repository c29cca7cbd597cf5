package main

import (
	"flag"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// nonDefaults gives each relayed flag values to try, the first that
// differs from the flag's default being used: a flag missing here fails
// TestRunFlagsRelayed, so a new flag gets a row.
func nonDefaults(t *testing.T) map[string][]string {
	dir := t.TempDir()
	other := ""
	for _, v := range ioctl.Versions() {
		if v != ioctl.DefaultVersion {
			other = v
		}
	}
	return map[string][]string{
		"instance": {"trn1.32xlarge"}, "devices": {"2"}, "arch": {"v2"}, "revision": {"255"}, "major": {"240"},
		"log-level": {"debug"}, "log-format": {"json"}, "debug-fuse": {"true"}, "driver-version": {other},
		"strict": {"true"}, "degraded-mmap": {"true"}, "inference-start": {"3"}, "exec-latency": {"1.5ms"}, "hang-end": {"1s"},
		"time-scale": {"2.5", "3.5"}, "inject": {"dma-abort"}, "fuse-transport": {"classic", "uring"},
		"memory-backing": {"file:" + dir, "store:" + dir}, "memory-limit": {"8G", "16G"},
		"exec-trace": {filepath.Join(dir, "exec.json")}, "log-file": {filepath.Join(dir, "daemon.log")},
		"pod": {"p1"}, "node-serial": {"hash:node-a", "hash:node-b"}, "pod-size": {"2", "4"}, "pod-slot": {"1"},
		"pod-timeout": {"7s", "8s"}, "pod-link-fault": {"left", "right"}, "userver-ctl": {"3"},
		"pds-node-count": {"2", "4"}, "pds-server-id": {"77", "78"}, "pod-peers": {"a:1,b:2"},
		"pod-secret-file": {filepath.Join(dir, "s1"), filepath.Join(dir, "s2")}, "pod-listen": {":7000"},
		"pod-link-timeout": {"3s", "4s"}, "pod-retry-timeout": {"9s", "10s"}, "pod-poll-interval": {"70ms", "80ms"},
		"uid": {"12345", "12346"}, "gid": {"12347", "12348"}, "no-chardev": {"true"}, "device-fds": {"supervisor", "fuse"},
		"direct": {"true"}, "no-new-privs": {"true"},
	}
}

// setAllNonDefault sets every flag of fl to a value other than its
// default.
func setAllNonDefault(t *testing.T, fl *flag.FlagSet) {
	t.Helper()
	values := nonDefaults(t)
	fl.VisitAll(func(f *flag.Flag) {
		for _, v := range values[f.Name] {
			if err := fl.Set(f.Name, v); err != nil {
				t.Fatalf("--%s=%s: %v", f.Name, v, err)
			}
			if f.Value.String() != f.DefValue {
				return
			}
		}
		t.Errorf("--%s: no value in nonDefaults other than its default %q: add one", f.Name, f.DefValue)
	})
}

// differences lists the flags whose values in a and b differ.
func differences(a, b *flag.FlagSet) []string {
	var diff []string
	a.VisitAll(func(f *flag.Flag) {
		if g := b.Lookup(f.Name); g == nil || g.Value.String() != f.Value.String() {
			diff = append(diff, f.Name)
		}
	})
	return diff
}

// run's flags, each set away from its default, reach the namespace child
// as they were parsed: the child's command line is derived from the flag
// set, so a flag cannot be forgotten. Dropping one argument must show.
func TestRunFlagsRelayed(t *testing.T) {
	var parent runFlags
	fl := newFlagSet("run")
	parent.register(fl)
	setAllNonDefault(t, fl)
	args := relayArgs(fl, new(runFlags).register)

	var child nsRun
	cfl := newNsRunFlags(&child)
	if err := cfl.Parse(append(args, "--rootless=true", "--", "true")); err != nil {
		t.Fatalf("the child refuses %q: %v", args, err)
	}
	if diff := differences(fl, cfl); len(diff) > 0 {
		t.Errorf("flags not relayed to the namespace child: %v", diff)
	}
	if !reflect.DeepEqual(parent, child.flags) {
		t.Errorf("the child parsed\n%+v\nwant\n%+v", child.flags, parent)
	}
	if !child.rootless || !slices.Equal(cfl.Args(), []string{"true"}) {
		t.Errorf("the child's own flag and CMD: rootless %v, CMD %q", child.rootless, cfl.Args())
	}

	// The comparison finds a flag left out of the relay.
	var short nsRun
	sfl := newNsRunFlags(&short)
	if err := sfl.Parse(args[1:]); err != nil {
		t.Fatal(err)
	}
	if diff := differences(fl, sfl); len(diff) != 1 {
		t.Errorf("with %s left out, the flags that differ are %v, want just it", args[0], diff)
	}
}

// checkDerived checks that argsOf(want) parses back to want in a set
// registered by register, and that it sets every flag of that set.
func checkDerived[T comparable](t *testing.T, want T, register func(*T, *flag.FlagSet)) {
	t.Helper()
	var got T
	fl := newFlagSet("child")
	register(&got, fl)
	args := argsOf(want, register)
	if err := fl.Parse(args); err != nil {
		t.Fatalf("the child refuses %q: %v", args, err)
	}
	if got != want {
		t.Errorf("the child parsed %+v from %q, want %+v", got, args, want)
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fl.VisitAll(func(f *flag.Flag) {
		if !set[f.Name] {
			t.Errorf("--%s is not relayed", f.Name)
		}
	})
}

// The hidden commands' flags, which their parent fills in, reach them as
// set: the exec helper's, the keeper's and replay's hidden halves'.
func TestHiddenCommandFlagsRelayed(t *testing.T) {
	checkDerived(t, execFlags{uid: 12345, gid: 12346, direct: true, noNewPrivs: true}, (*execFlags).register)
	checkDerived(t, keepFlags{as: keepUserns, uid: 12345, gid: 12346, files: 2, pgid: 4242}, (*keepFlags).register)
	checkDerived(t, replayFlags{strict: true, mapAddrs: true}, (*replayFlags).register)
}
