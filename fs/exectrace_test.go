package fs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/runtime"
)

// execTraceFile is an --exec-trace file as a trace viewer reads it.
type execTraceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Ts   *float64       `json:"ts"`
		Dur  *float64       `json:"dur"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

// A staged program run under --exec-trace leaves, once the daemon
// stopped, a complete trace: a named track per engine of the core, the
// records each ran, the wait for the semaphore the host wrote named after
// its predicate, and the exec queue's copies (the request's delivery) on
// the queue's track.
func TestExecTraceOfProgram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exec.json")
	// Registered before the mount: runs after the daemon stopped.
	t.Cleanup(func() { checkExecTrace(t, path) })
	c := newProgClientConfig(t, device.Config{Instance: "trn2.48xlarge", ExecTrace: path})
	var addrs [seq.NumEngines]uint64
	for e := range addrs {
		addrs[e] = c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewNotify(0, runtime.RecordStart),
			seq.NewRecord(seq.OpMatmulSparse), seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewNotify(0, runtime.RecordEnd), seq.NewRecord(seq.OpHalt))
	}
	c.deliver(addrs)
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordStart)
	c.waitStates(seq.NumEngines, seq.Waiting)
	if err := c.dev.SemaphoreWrite(progCore, 7, 1); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordEnd)
	c.waitStates(seq.NumEngines, seq.Halted)
}

func checkExecTrace(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f execTraceFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("trace is not valid JSON after the daemon stopped: %v", err)
	}
	tracks := map[[2]int]string{}
	for _, ev := range f.TraceEvents {
		if ev.Ph == "M" && ev.Name == "thread_name" {
			tracks[[2]int{ev.Pid, ev.Tid}] = ev.Args["name"].(string)
		}
	}
	seen := map[string]bool{}
	copies := 0
	for _, ev := range f.TraceEvents {
		if ev.Ph != "X" {
			continue
		}
		if ev.Ts == nil || ev.Dur == nil {
			t.Errorf("complete event without ts/dur: %+v", ev)
		}
		track := tracks[[2]int{ev.Pid, ev.Tid}]
		if track == "" {
			t.Errorf("event on an unnamed track: %+v", ev)
		}
		if ev.Pid == 0 && strings.HasPrefix(track, "dma ") && ev.Name == "copy" {
			copies++
		}
		seen[track+"/"+ev.Name] = true
		if strings.HasSuffix(ev.Name, " (not emulated)") && (ev.Args["opcode"] != "0x07" || ev.Args["not_emulated"] != seq.WhyNoSource) {
			t.Errorf("not-emulated event %q without its opcode and why: %v", ev.Name, ev.Args)
		}
	}
	for e := range seq.Engine(seq.NumEngines) {
		tid := progCore*seq.NumEngines + int(e)
		want := "nc1 " + e.String()
		if got := tracks[[2]int{0, tid}]; got != want {
			t.Errorf("track tid %d named %q, want %q", tid, got, want)
		}
		for _, name := range []string{"control", "MATMUL_SPARSE (not emulated)", "wait semaphore 7 >= 1"} {
			if !seen[want+"/"+name] {
				t.Errorf("no %q event on %s", name, want)
			}
		}
	}
	if copies < 2 { // the request, then the poke
		t.Errorf("%d DMA copies traced, want the exec request's two at least", copies)
	}
}
