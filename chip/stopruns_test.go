package chip

import (
	"context"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
)

// StopRuns ends an endless loop and a parked engine and returns only once
// both returned: the driver frees the memory they fetch from next.
func TestStopRunsWaitsForEngines(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc = 0
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.POOL: seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, 0, 1), seq.NewALUImm(seq.ALUAdd, 1, 1, 1), seq.NewBranch(seq.BranchAlways, 0, 0, -seq.RecordSize)),
		seq.PE:   seq.Assemble(0x2000, seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt)),
	})
	c.Core(nc).Apply(incWindow(0), Inc, DoorbellRun)
	waitUntil(t, "the loop going on after the doorbell", func() bool {
		return r.seqs[seq.POOL].Counts().Records > 2*inlineBudget
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Core(nc).StopRuns(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	default:
		t.Fatal("StopRuns returned with an engine still running")
	}
	for _, e := range []seq.Engine{seq.POOL, seq.PE} {
		if st := r.seqs[e].Status(); st.State != seq.Stopped {
			t.Errorf("%v after StopRuns: %v", e, st)
		}
	}
}
