package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
)

// buildProcsCheck compiles testdata/procs_check.c against a header
// generated from the ABI table.
func buildProcsCheck(t *testing.T) string {
	t.Helper()
	return buildCClient(t, "procs_check", []uint32{
		ioctl.CmdMemAllocV2MT64, ioctl.CmdMemGetExtendedInfo, ioctl.CmdMemGetPA, ioctl.CmdDMAQueueInit, ioctl.CmdAcquireNeuronDS,
	})
}

// procsClientSaid is what procs_check prints when every step went as the
// driver's per-process rules say.
var procsClientSaid = []string{
	"17th open: EBUSY",
	"MEM_GET_PA on O_WRONLY: EINVAL",
	"open after the holders exited: succeeded",
	"child's memory while it lives: present",
	"child's memory after SIGKILL: gone",
	"its queue after SIGKILL: free",
	"child's datastore slot by pid: shared",
	"its slot after it exited: ENOENT",
	"slot of a child that exec'd: ENOENT",
	"procs ok",
}

// The multi-process client, traced with --children on the oldest and the
// newest emulated driver, replays with every call matching: each recorded
// process is a process of its own again (the 17th open fails with EBUSY),
// the SIGKILLed owner's memory and queue are gone after its replayed death,
// a datastore slot taken by another process's pid is that process's
// replayer's, an exec closes the O_CLOEXEC fd that held a slot, and the
// failed MEM_GET_PA reports no difference.
func TestReplayProcesses(t *testing.T) {
	bin := buildProcsCheck(t)
	for _, driver := range []string{"2.25.4.0", ioctl.Versions()[0]} {
		t.Run(driver, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "procs.jsonl")
			cmd := neuronfs(t, "run", "--instance", "trn2.48xlarge", "--driver-version", driver, "--",
				os.Args[0], "trace", "--children", "-o", out, "--", bin, "/dev/neuron1")
			said, err := cmd.Output()
			if err != nil || strings.TrimSpace(string(said)) != strings.Join(procsClientSaid, "\n") {
				t.Fatalf("traced client: %v\n%s\nwant\n%s", err, said, strings.Join(procsClientSaid, "\n"))
			}
			tr := readTrace(t, out)
			// The rows to match: the EBUSY open and the failed MEM_GET_PA.
			calls, forks, killed := 0, 0, 0
			ebusy, einval := "", ""
			for _, r := range tr.Records {
				switch {
				case r.Op == trace.OpOpen && r.Error == "EBUSY":
					ebusy = itoa(r.Seq)
				case r.Name == "NEURON_IOCTL_MEM_GET_PA" && r.Error == "EINVAL":
					einval = itoa(r.Seq)
				}
				switch {
				case r.Op == trace.OpFork && !r.Thread:
					forks++
				case r.Op == trace.OpExit && r.ProcessExit && r.Signal == 9:
					killed++
				case !r.Lifetime():
					calls++
				}
			}
			if forks != 19 || killed != 1 || ebusy == "" || einval == "" {
				t.Errorf("trace has %d process forks and %d SIGKILLs, want 19 and 1; EBUSY open at %q, EINVAL MEM_GET_PA at %q", forks, killed, ebusy, einval)
			}
			table, stderr, status := replayTable(t, out)
			t.Logf("replay on %s:\n%s", driver, table)
			if status != 0 {
				t.Fatalf("replay: status %d\n%s%s", status, table, stderr)
			}
			rs := rows(t, table)
			for seq, res := range rs {
				if res != "match" {
					t.Errorf("call %s: %s", seq, res)
				}
			}
			if rs[ebusy] != "match" || rs[einval] != "match" {
				t.Errorf("EBUSY open %q, MEM_GET_PA %q", rs[ebusy], rs[einval])
			}
			if n := len(rs); n != calls {
				t.Errorf("replay table has %d rows, the trace %d calls", n, calls)
			}
			if !strings.Contains(table, " 0 differ, 0 skipped") {
				t.Errorf("summary:\n%s", table)
			}
		})
	}
}
