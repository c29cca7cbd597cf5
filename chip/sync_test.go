package chip

import (
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// withoutSemArea makes core nc's semaphore area unreachable, as when its
// window cannot be mapped: c's space loses every window holding it.
func withoutSemArea(t *testing.T, c *Chip, nc int) {
	t.Helper()
	res, ok := c.arch.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if !ok {
		t.Fatalf("core %d has no semaphore resource", nc)
	}
	var keep []dma.Range
	for _, r := range engineWindows(c.arch) {
		if res.Offset+res.Size <= r.Base || r.Base+r.Size <= res.Offset {
			keep = append(keep, r)
		}
	}
	orig := c.mem
	c.mem = dma.NewSpace(c.phys.fd, keep)
	t.Cleanup(func() {
		c.mem.Close()
		c.mem = orig
	})
	if _, ok := c.Core(nc).Area(); ok {
		t.Fatal("the area is still reachable")
	}
}

// The engines of a core whose area is unreachable still share one set of
// semaphores and events, and a store by one wakes another parked on it:
// PE (run first) parks at its wait, ACT's increment releases it, and the
// run takes PE along before it returns.
func TestCoreSyncSharedWithoutArea(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc = 1
	withoutSemArea(t, c, nc)
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE:  seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, 9, 1), seq.NewSemUpdate(seq.UpdateSemInc, 10, 0), seq.NewRecord(seq.OpHalt)),
		seq.ACT: seq.Assemble(0x2000, seq.NewSemUpdate(seq.UpdateSemInc, 9, 0), seq.NewRecord(seq.OpHalt)),
	})
	for _, e := range []seq.Engine{seq.PE, seq.ACT} {
		if st := r.seqs[e].Status(); st.State != seq.Halted {
			t.Errorf("%v when the run returned: %v", e, st)
		}
	}
	if v := c.Core(nc).Semaphore(10); v != 1 {
		t.Errorf("semaphore 10 as ACT sees it = %d, want PE's 1", v)
	}
	if n := c.cores[nc].runs.nparked.Load(); n != 0 {
		t.Errorf("%d engines still parked", n)
	}
}
