package replay

import (
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
