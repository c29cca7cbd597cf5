package exectrace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
)

// traceFile is the file as a trace viewer reads it.
type traceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Ts   *float64       `json:"ts"`
		Dur  *float64       `json:"dur"`
		Pid  *int           `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

// Parse reads a trace file with encoding/json: it must be complete.
func Parse(t *testing.T, path string) traceFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f traceFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("trace is not valid JSON: %v\n%s", err, b)
	}
	for i, ev := range f.TraceEvents {
		if ev.Name == "" || ev.Pid == nil || (ev.Ph != "X" && ev.Ph != "M") {
			t.Errorf("event %d malformed: %+v", i, ev)
		}
		if ev.Ph == "X" && (ev.Ts == nil || ev.Dur == nil || *ev.Dur < 0) {
			t.Errorf("complete event %d without ts/dur: %+v", i, ev)
		}
	}
	return f
}

// tracks maps (pid, tid) to the track's name.
func (f traceFile) tracks() map[[2]int]string {
	out := map[[2]int]string{}
	for _, ev := range f.TraceEvents {
		if ev.Ph == "M" && ev.Name == "thread_name" {
			out[[2]int{*ev.Pid, ev.Tid}] = ev.Args["name"].(string)
		}
	}
	return out
}

// A core's PE runs two control records, an un-emulated MATMUL, then waits
// for a semaphore ACT raises once the test saw PE blocked; a DMA step
// completes. The file names every track, has one event for the run of
// control records, one for the MATMUL and one for the wait, named after
// its predicate, and a copy on the queue's track.
func TestTraceEngineAndQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const pid, nc = 3, 1
	d := w.Device(pid, "neuron3")
	var sync seq.Words
	pe := seq.New(seq.Config{Engine: seq.PE, Sync: &sync, Tracer: d.Engine(nc, seq.PE)})
	act := seq.New(seq.Config{Engine: seq.ACT, Sync: &sync, Tracer: d.Engine(nc, seq.ACT)})
	peImg := seq.Assemble(0x1000, seq.NewRecord(seq.OpNop), seq.NewRecord(seq.OpNop), seq.NewRecord(seq.OpMatmul),
		seq.NewWait(seq.WaitSemGE, 3, 1), seq.NewRecord(seq.OpHalt))
	actImg := seq.Assemble(0x2000, seq.NewSemUpdate(seq.UpdateSemInc, 3, 0), seq.NewRecord(seq.OpHalt))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := make(chan seq.Result, 1)
	go func() { res <- pe.Run(ctx, seq.ImageProgram(peImg)) }()
	for pe.Status().State != seq.Waiting {
		if ctx.Err() != nil {
			t.Fatalf("PE never waited: %v", pe.Status())
		}
		time.Sleep(time.Millisecond)
	}
	if r := act.Run(ctx, seq.ImageProgram(actImg)); r.State != seq.Halted {
		t.Fatalf("ACT: %+v", r)
	}
	if r := <-res; r.State != seq.Halted {
		t.Fatalf("PE: %+v", r)
	}
	d.Copy(2, 1, 0x100, 0x200, 52)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d.Copy(2, 1, 0x100, 0x200, 52) // after Close: dropped, the file stays whole

	f := Parse(t, path)
	tracks := f.tracks()
	peTid, actTid, qTid := nc*seq.NumEngines, nc*seq.NumEngines+1, dmaTidBase+2*16+1
	for key, want := range map[[2]int]string{{pid, peTid}: "nc1 PE", {pid, actTid}: "nc1 ACT", {pid, qTid}: "dma 2 q1"} {
		if tracks[key] != want {
			t.Errorf("track %v named %q, want %q (tracks %v)", key, tracks[key], want, tracks)
		}
	}
	count := map[string]int{}
	var sawProcess bool
	for _, ev := range f.TraceEvents {
		if ev.Ph == "M" {
			sawProcess = sawProcess || (ev.Name == "process_name" && ev.Args["name"] == "neuron3")
			continue
		}
		key := [2]int{*ev.Pid, ev.Tid}
		count[tracks[key]+"/"+ev.Name]++
		switch {
		case tracks[key] == "nc1 PE" && ev.Name == "control" && ev.Args["pc"] == "0x1000":
			if ev.Args["records"] != 2.0 || ev.Args["first"] != "NOP" {
				t.Errorf("run of control records: %v", ev.Args)
			}
		case tracks[key] == "nc1 PE" && strings.HasPrefix(ev.Name, "wait"):
			if ev.Name != "wait semaphore 3 >= 1" || ev.Args["now"] != 1.0 || ev.Args["pc"] != "0x10c0" {
				t.Errorf("wait event %q %v", ev.Name, ev.Args)
			}
		case tracks[key] == "dma 2 q1":
			if ev.Name != "copy" || ev.Args["bytes"] != 52.0 || ev.Args["dst"] != "0x200" {
				t.Errorf("copy event %q %v", ev.Name, ev.Args)
			}
		}
	}
	if !sawProcess {
		t.Error("no process_name for the device")
	}
	for _, want := range []string{"nc1 PE/control", "nc1 PE/MATMUL (not emulated)", "nc1 PE/wait semaphore 3 >= 1", "nc1 ACT/control", "dma 2 q1/copy"} {
		if count[want] == 0 {
			t.Errorf("no %s event; have %v", want, count)
		}
	}
	// The wait record (and the HALT after it) are one more run of control
	// records after the wait.
	if count["nc1 PE/control"] != 2 || count["dma 2 q1/copy"] != 1 {
		t.Errorf("event counts %v", count)
	}
}

// A looping program stops being traced at its run's limit, and says so.
func TestTraceRunLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 20
	d := w.Device(0, "neuron0")
	pe := seq.New(seq.Config{Engine: seq.PE, Tracer: d.Engine(0, seq.PE), TraceLimit: limit})
	// 1000 rounds of MATMUL, counter, branch: 1000 events untraced.
	img := seq.Assemble(0x1000, seq.NewRecord(seq.OpMatmul), seq.NewALUImm(seq.ALUAdd, 1, 1, 1),
		seq.NewBranch(seq.BranchLT, 1, 1000, -2*seq.RecordSize), seq.NewRecord(seq.OpHalt))
	if r := pe.Run(context.Background(), seq.ImageProgram(img)); r.State != seq.Halted {
		t.Fatalf("%+v", r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var n, truncated int
	for _, ev := range Parse(t, path).TraceEvents {
		if ev.Ph == "X" {
			n++
			if ev.Name == "trace truncated" {
				truncated++
			}
		}
	}
	if n != limit || truncated != 1 {
		t.Errorf("%d events, %d truncation notes; want %d and 1", n, truncated, limit)
	}
}

// Every record the engine only counted is its own event, named "(not
// emulated)", with its opcode, address and why; a record that ran is
// not marked.
func TestTraceNotEmulated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := w.Device(0, "neuron0")
	act := seq.New(seq.Config{Engine: seq.ACT, Tracer: d.Engine(0, seq.ACT)})
	// ACTIVATION_TABLE_LOAD runs (it has no effect to compute);
	// MATMUL_SPARSE (0x07) has no documented layout; ACTIVATE without
	// on-chip memory cannot run.
	img := seq.Assemble(0x4000, seq.NewRecord(seq.OpActTableLoad), seq.NewRecord(seq.OpMatmulSparse),
		seq.NewRecord(seq.OpNop), seq.NewRecord(seq.OpActivate), seq.NewRecord(seq.OpHalt))
	if r := act.Run(context.Background(), seq.ImageProgram(img)); r.State != seq.Halted {
		t.Fatalf("%+v", r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	type mark struct{ pc, opcode string }
	got := map[mark]string{}
	var ran bool
	for _, ev := range Parse(t, path).TraceEvents {
		if ev.Ph != "X" {
			continue
		}
		why, _ := ev.Args["not_emulated"].(string)
		switch {
		case ev.Name == "ACTIVATION_TABLE_LOAD":
			ran = why == "" && ev.Args["pc"] == "0x4000"
		case strings.HasSuffix(ev.Name, " (not emulated)"):
			op, _ := ev.Args["opcode"].(string)
			pc, _ := ev.Args["pc"].(string)
			got[mark{pc, op}] = why
		case why != "":
			t.Errorf("event %q carries not_emulated %q but its name does not say so", ev.Name, why)
		}
	}
	if !ran {
		t.Error("ACTIVATION_TABLE_LOAD missing, or marked not emulated")
	}
	if len(got) != 2 || got[mark{"0x4040", "0x07"}] != seq.WhyNoSource || got[mark{"0x40c0", "0x21"}] == "" {
		t.Errorf("not-emulated events %v; want MATMUL_SPARSE at 0x4040 and ACTIVATE at 0x40c0", got)
	}
	c := act.Counts()
	if c.NotEmulated != 2 || c.LastNotEmulated == nil || c.LastNotEmulated.PC != 0x40c0 || c.LastNotEmulated.Op != seq.OpActivate {
		t.Errorf("counts: %d not emulated, last %v", c.NotEmulated, c.LastNotEmulated)
	}
}
