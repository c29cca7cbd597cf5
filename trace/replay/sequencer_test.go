package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/trace"
)

// A process the trace did not follow is one skipped row saying its calls
// are not recorded; threads, execs and the exits of processes that made
// no call are no rows, and start no worker.
func TestUntracedProcess(t *testing.T) {
	tr := &trace.Trace{Records: []trace.Record{
		{Seq: 1, Op: trace.OpFork, TID: 7, TGID: 7, Child: 8, Thread: true},
		{Seq: 2, Op: trace.OpFork, TID: 7, TGID: 7, Child: 9, Untraced: true},
		{Seq: 3, Op: trace.OpExec, TID: 7, TGID: 7, Path: "/bin/true"},
		{Seq: 4, Op: trace.OpExit, TID: 7, TGID: 7, ProcessExit: true},
	}}
	rs, err := Run(tr, Options{Worker: []string{"/nonexistent/worker"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Seq != 2 || rs[0].Status != Skipped || rs[0].Call != "fork 9" ||
		len(rs[0].NotCompared) != 1 || !strings.HasPrefix(rs[0].NotCompared[0], "not recorded: the calls of process 9") {
		t.Fatalf("results %+v", rs)
	}
}

// A trace of more live processes than replay's limit (a trace is
// untrusted: a million processes that never exit) starts no more
// replayers than that: the calls and forks of the others are skipped,
// saying why.
func TestReplayLimitsProcesses(t *testing.T) {
	tr := &trace.Trace{Header: trace.Header{Format: trace.Format}}
	seq := 0
	add := func(r trace.Record) {
		seq++
		r.Seq = seq
		tr.Records = append(tr.Records, r)
	}
	// Process 7 makes a call, forks 8 (which makes one), then forks 9
	// and 10 makes a call: over a limit of two.
	add(trace.Record{Op: trace.OpClose, TID: 7, TGID: 7, FD: 3, Path: "/dev/neuron0"})
	add(trace.Record{Op: trace.OpFork, TID: 7, TGID: 7, Child: 8})
	add(trace.Record{Op: trace.OpClose, TID: 8, TGID: 8, FD: 3, Path: "/dev/neuron0"})
	add(trace.Record{Op: trace.OpFork, TID: 7, TGID: 7, Child: 9})
	add(trace.Record{Op: trace.OpClose, TID: 9, TGID: 9, FD: 3, Path: "/dev/neuron0"})
	add(trace.Record{Op: trace.OpClose, TID: 10, TGID: 10, FD: 3, Path: "/dev/neuron0"})
	path := filepath.Join(t.TempDir(), "procs.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.NewWriter(f, tr.Header)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Records {
		if err := w.Write(&tr.Records[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	t.Setenv(workerEnv, path)
	rs, err := Run(tr, Options{Worker: []string{os.Args[0]}, maxWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%d %s %s %s", r.Seq, r.Call, r.Status, strings.Join(r.NotCompared, "; ")))
	}
	full := "2 recorded processes are alive already, replay's limit: this one's calls are not replayed"
	want := []string{
		"1 close /dev/neuron0 skipped " + notOpened,
		"3 close /dev/neuron0 skipped " + notOpened,
		"4 fork 9 skipped " + full,
		"5 close (process 9) skipped " + full,
		"6 close (process 10) skipped " + full,
	}
	if !slices.Equal(got, want) {
		t.Errorf("results\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
