package main

import (
	"path/filepath"
	"testing"

	"github.com/neuronfs/neuronfs/trace"
)

// A trace of a command begins with the command: the launcher's own Go
// threads, started before its exec and ended by it, are not in it.
func TestTraceLeavesOutLauncherThreads(t *testing.T) {
	out := filepath.Join(t.TempDir(), "true.jsonl")
	if err := neuronfs(t, "trace", "-o", out, "--", "/bin/true").Run(); err != nil {
		t.Fatal(err)
	}
	tr := readTrace(t, out)
	var execs, exits int
	for _, r := range tr.Records {
		switch {
		case r.Op == trace.OpFork:
			t.Errorf("a fork in the trace of /bin/true: %+v", r)
		case r.Op == trace.OpExec:
			execs++
		case r.Op == trace.OpExit && !r.ProcessExit:
			t.Errorf("a thread's exit in the trace of /bin/true: %+v", r)
		case r.Op == trace.OpExit:
			exits++
		}
	}
	if execs != 1 || exits != 1 {
		t.Fatalf("%d execs and %d process exits, want one of each: %+v", execs, exits, tr.Records)
	}
}
