package seq

import (
	"context"
	"testing"
	"time"
)

// budget bounds every wait of these tests: long enough for a loaded
// 2-core machine, short enough that a lost wakeup fails rather than hangs.
const budget = 20 * time.Second

// core is a test core: its semaphores and events, a notification sink,
// and one sequencer per engine that the test runs.
type core struct {
	t     *testing.T
	words Words
	mem   *OnChipMemory // the engines' SBUF and PSUM
	notes chan Notification
	seqs  [NumEngines]*Sequencer
}

func newCore(t *testing.T) *core {
	c := &core{t: t, notes: make(chan Notification, 4096), mem: NewOnChipMemory(testSBUFActive)}
	for e := range Engine(NumEngines) {
		c.seqs[e] = New(Config{Engine: e, Sync: &c.words, Notify: func(n Notification) { c.notes <- n }, YieldEvery: 64, OnChip: c.mem})
	}
	return c
}

// start runs images on their engines, each in its own goroutine; results
// arrive on the returned channel.
type done struct {
	e   Engine
	res Result
}

func (c *core) start(ctx context.Context, imgs map[Engine]*Image) <-chan done {
	out := make(chan done, len(imgs))
	for e, img := range imgs {
		go func() { out <- done{e, c.seqs[e].Run(ctx, ImageProgram(img))} }()
	}
	return out
}

// results collects n results.
func (c *core) results(ch <-chan done, n int) map[Engine]Result {
	c.t.Helper()
	got := map[Engine]Result{}
	for range n {
		select {
		case d := <-ch:
			got[d.e] = d.res
		case <-time.After(budget):
			c.t.Fatalf("engines did not end; have %v", got)
		}
	}
	return got
}

// note waits for the next notification.
func (c *core) note() Notification {
	c.t.Helper()
	select {
	case n := <-c.notes:
		return n
	case <-time.After(budget):
		c.t.Fatal("no notification")
		return Notification{}
	}
}

// waitState waits until engine e publishes state st.
func (c *core) waitState(e Engine, st State) Status {
	c.t.Helper()
	deadline := time.Now().Add(budget)
	for {
		s := c.seqs[e].Status()
		if s.State == st {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%v never became %v: %v", e, st, s)
		}
		time.Sleep(time.Millisecond)
	}
}

// testSBUFActive is a V3 core's SBUF partition (224 KiB).
const testSBUFActive = 0x38000

func halt() *Record { return NewRecord(OpHalt) }

// withEvents returns r with its standard events tuple set.
func withEvents(r *Record, e Events) *Record { r.SetEvents(e); return r }

func semInc(idx uint8) *Record { return NewSemUpdate(UpdateSemAdd+UpdateCompleted, idx, 1) }
func semSet(idx uint8, v uint32) *Record {
	return NewSemUpdate(UpdateSemWrite, idx, v)
}
