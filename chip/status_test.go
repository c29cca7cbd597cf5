package chip

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// stallDriver is testDriver whose DMA stalls while stall is set.
type stallDriver struct {
	testDriver
	stall atomic.Bool
}

func (d *stallDriver) Faults() Faults {
	f := d.testDriver.Faults()
	f.DMA = func() (bool, uint32) { return d.stall.Load(), 0 }
	return f
}

// runEngines runs imgs on core nc's sequencers as a staged run does, over
// the core's semaphores; the run is stopped at the test's end.
func runEngines(t *testing.T, c *Chip, nc int, imgs map[seq.Engine]*seq.Image) *seqRun {
	core := c.Core(nc)
	r := &seqRun{done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for e, img := range imgs {
		r.seqs[e] = seq.New(core.seqConfig(e, r))
		r.progs[e] = seq.ImageProgram(img)
	}
	r.live.Store(int32(len(imgs)))
	cr := &core.runs
	cr.mu.Lock()
	cr.cur = r
	cr.mu.Unlock()
	core.startRun(r)
	t.Cleanup(func() { stopRun(r) })
	return r
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A core is blocked when every engine still running waits and none of its
// DMA queues moves: a halted engine does not count, a stalled copy on the
// core's queue could still release a wait, and an engine that runs is not
// blocked. The hang names each waiting engine's record and predicate.
func TestBlockedCore(t *testing.T) {
	inst, _ := dhal.LookupInstance("trn2.3xlarge")
	f, _ := dhal.Facts(inst.Product.Arch)
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	drv := &stallDriver{}
	c, err := New(Config{Name: "neuron0", Arch: f, Log: logrus.NewEntry(l), Epoch: time.Now(), InferenceStart: -1}, drv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(); c.Close() })
	const nc = 1
	if _, ok := c.Core(nc).Blocked(); ok {
		t.Fatal("blocked without a run")
	}
	if hs := c.BlockedCores(); len(hs) != 0 {
		t.Fatalf("blocked cores %v without a run", hs)
	}
	const peBase, actBase, poolBase = 0x1000, 0x2000, 0x3000
	runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE:   seq.Assemble(peBase, seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt)),
		seq.ACT:  seq.Assemble(actBase, seq.NewWait(seq.WaitSemGE, 8, 1), seq.NewALUImm(seq.ALUAdd, 1, 1, 1), seq.NewBranch(seq.BranchLT, 1, 1<<30, -seq.RecordSize), seq.NewRecord(seq.OpHalt)),
		seq.POOL: seq.Assemble(poolBase, seq.NewRecord(seq.OpHalt)),
	})
	var h Hang
	waitUntil(t, "PE and ACT blocked", func() (ok bool) { h, ok = c.Core(nc).Blocked(); return ok && len(h.Waiting) == 2 })
	s := h.String()
	for _, want := range []string{"core 1: ", "PE waits at 0x1000", "for semaphore 7 >= 1 (now 0)", "; ACT waits at 0x2000", "for semaphore 8 >= 1 (now 0)"} {
		if !strings.Contains(s, want) {
			t.Errorf("hang %q lacks %q", s, want)
		}
	}
	if hs := c.BlockedCores(); len(hs) != 1 || hs[0].Core != nc {
		t.Errorf("blocked cores %v, want core %d alone", hs, nc)
	}

	// A copy on one of the core's queues, stalled: it could still raise a
	// semaphore, so the core is not blocked until it is done.
	drv.stall.Store(true)
	eng := c.Engine(nc*f.DMAEnginesPerCore + 2)
	base := f.HBMBases[0] + 1<<20
	const txRing, rxRing, src, dst = 0, 0x1000, 0x10000, 0x20000
	for i, ring := range []uint64{txRing, rxRing} {
		tx, rx := dmadesc.CopyPair(base+src, base+dst, 64, dmadesc.InitialRingID)
		b, ok := c.mem.Slice(base+ring, dmadesc.Size)
		if !ok {
			t.Fatal("no memory for the rings")
		}
		if i == 0 {
			tx.Put(b)
		} else {
			rx.Put(b)
		}
	}
	if errno := eng.InitQueue(0, dma.RingSpec{Base: base + txRing, Size: 32}, dma.RingSpec{Base: base + rxRing, Size: 32}); errno != 0 {
		t.Fatal(errno)
	}
	if errno := eng.Doorbell(0, 1, 1); errno != 0 {
		t.Fatal(errno)
	}
	if st := eng.QueueState(0, dma.TX); st.Head == st.Tail {
		t.Fatalf("the stalled queue has nothing pending (%+v): the test proves nothing", st)
	}
	if _, ok := c.Core(nc).Blocked(); ok {
		t.Error("blocked while a copy of the core is in flight")
	}
	drv.stall.Store(false)
	eng.Kick()
	waitUntil(t, "blocked again once the copy is done", func() bool { _, ok := c.Core(nc).Blocked(); return ok })

	// ACT released: it loops, running, so the core is not blocked.
	c.Core(nc).UpdateSemaphore(8, seq.SemSet, 1)
	waitUntil(t, "ACT running", func() bool { return c.cores[nc].runs.cur.seqs[seq.ACT].Status().State == seq.Running })
	if h, ok := c.Core(nc).Blocked(); ok {
		t.Errorf("blocked while ACT runs: %v", h)
	}
}
