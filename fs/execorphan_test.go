package fs_test

import (
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// A program that loops forever, and one parked at a wait nobody will
// satisfy, stop once the process that staged them has closed the device:
// nobody is left who could ring or reset the core, and its engines must
// neither burn the host's CPU nor show as a hang until the daemon stops.
// They stop cleanly, before the process's memory (their images) goes.
func TestExecProgramStopsWhenLastUserLeaves(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			dev.Close()
		}
	})
	if err := dev.Reset(1 << progCore); err != nil {
		t.Fatal(err)
	}
	exec, err := dev.InitQueue(progCore*16+3, 6, 64, runtime.AllocOptions{Core: progCore})
	if err != nil {
		t.Fatal(err)
	}
	// No NQ rings: they are mappings, which would keep the device open.
	c := &progClient{execClient: &execClient{t: t, dev: dev, exec: exec, core: progCore}, sys: sys, dir: dir}
	loop := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewALUImm(seq.ALUAdd, 1, 1, 1), seq.NewBranch(seq.BranchAlways, 0, 0, -seq.RecordSize))
	// ACT parks at a wait nobody will satisfy: no goroutine, but a hang
	// the cores file would report for ever.
	park := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt))
	c.deliver([seq.NumEngines]uint64{loop, park, loop})
	if err := dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	core := sys.Device(0).Chip().Core(progCore)
	live := func() int {
		n := 0
		for _, r := range core.EngineReports() {
			if st := r.Status.State; st == seq.Running || st == seq.Waiting {
				n++
			}
		}
		return n
	}
	records := func() uint64 { return core.EngineReports()[0].Counts.Records }
	for deadline := time.Now().Add(20 * time.Second); live() < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("engines never all started: %v", core.EngineStatus())
		}
		time.Sleep(time.Millisecond)
	}
	for first, deadline := records(), time.Now().Add(20*time.Second); records() == first; {
		if time.Now().After(deadline) {
			t.Fatalf("the loop does not run: %d records", first)
		}
		time.Sleep(time.Millisecond)
	}

	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	// The close's flush and release are all the driver takes.
	budget := sys.FlushBudget() + sys.ReleaseBudget()
	deadline := time.Now().Add(budget)
	for live() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("engines still running or waiting %v after the last close: %v", budget, core.EngineStatus())
		}
		time.Sleep(time.Millisecond)
	}
	for _, s := range core.EngineStatus() {
		if s.State != seq.Stopped {
			t.Errorf("engine after the last close: %v, want stopped", s)
		}
	}
	after := records()
	time.Sleep(10 * time.Millisecond)
	if again := records(); again != after {
		t.Errorf("a stopped engine went on: %d records, then %d", after, again)
	}
}
