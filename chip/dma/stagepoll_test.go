package dma

import (
	"context"
	"testing"
	"time"
)

// Descriptors stored into device memory with no request (through a
// mapping: no Restage) start a device-fed queue waiting for them while
// the engine polls; past the budget the queue stays waiting, no poller
// runs, and a Restage still starts it.
func TestFedQueueFindsUnannouncedStores(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	src, dst := uint64(memBase+0x10000), uint64(memBase+0x20000)
	if errno := e.InitQueue(3, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	completed := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for e.QueueState(3, RX).Completed != want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := e.QueueState(3, RX).Completed; got != want || e.Starved(3) {
			t.Fatalf("%d descriptors done, starved %v; want %d, not waiting", got, e.Starved(3), want)
		}
	}
	e.TailIncrement(3, TX, 1)
	e.TailIncrement(3, RX, 1)
	waitIdle(t, e, 3)
	if !e.Starved(3) {
		t.Fatal("a tail past what is staged does not wait")
	}
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{{src, dst, 64}}) // a store, no Restage
	completed(1)

	// Nothing stored within the budget: the poller gives up, the queue waits.
	e.TailIncrement(3, TX, 1)
	e.TailIncrement(3, RX, 1)
	waitIdle(t, e, 3)
	if !e.Starved(3) {
		t.Fatal("the second tail past what is staged does not wait")
	}
	ctx, cancel := context.WithTimeout(context.Background(), StageBudget+10*time.Second)
	defer cancel()
	if err := e.WaitPoller(ctx); err != nil || !e.Starved(3) {
		t.Fatalf("poller %v, starved %v: want it ended with the queue still waiting", err, e.Starved(3))
	}
	putPairs(m, txRing, rxRing, 32, 1, [][3]uint64{{src + 64, dst + 64, 64}})
	e.Restage()
	completed(2)
}
