package dma

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A device-fed queue moves exactly what each increment makes available,
// and a tail moved past what is staged waits at the first descriptor not
// yet written, runs nothing stale, and goes on once the descriptor is
// staged and Restage looks again. The engines' shared count of waiting
// queues (a chip's, Options.Starved) follows.
func TestFedTailWaitsForStaged(t *testing.T) {
	var starved atomic.Int32
	e, m := newTestEngine(t, 1<<20, Options{Starved: &starved})
	const txRing, rxRing = memBase, memBase + 0x1000
	src, dst := uint64(memBase+0x10000), uint64(memBase+0x20000)
	for i := range 256 {
		m.B[src-memBase+uint64(i)] = byte(i + 1)
	}
	if errno := e.InitQueue(2, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{{src, dst, 64}, {src + 64, dst + 64, 64}})
	done := func() uint64 { waitIdle(t, e, 2); return e.QueueState(2, RX).Completed }
	if got := done(); got != 0 {
		t.Fatalf("%d descriptors ran before any increment", got)
	}
	for want := uint64(1); want <= 2; want++ {
		e.TailIncrement(2, TX, 1)
		e.TailIncrement(2, RX, 1)
		if got := done(); got != want {
			t.Fatalf("after increment %d: %d descriptors done, want %d", want, got, want)
		}
	}
	// The third increment comes before its descriptors: it waits.
	e.TailIncrement(2, TX, 1)
	e.TailIncrement(2, RX, 1)
	if got := done(); got != 2 || !e.Starved(2) || starved.Load() != 1 {
		t.Fatalf("a tail past what is staged: %d done, starved %v (shared count %d); want 2 done and waiting (1)", got, e.Starved(2), starved.Load())
	}
	if st := e.QueueState(2, TX); st.HWStatus != 0 || st.SWStatus != uint32(QueueEnabled) {
		t.Fatalf("the waiting queue stopped: %+v", st)
	}
	e.Restage() // nothing written yet: still waits
	if got := done(); got != 2 || !e.Starved(2) {
		t.Fatalf("restaged with nothing written: %d done, starved %v", got, e.Starved(2))
	}
	putPairs(m, txRing, rxRing, 32, 2, [][3]uint64{{src + 128, dst + 128, 128}})
	e.Restage()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for e.QueueState(2, RX).Completed != 3 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if got := done(); got != 3 || e.Starved(2) || starved.Load() != 0 {
		t.Fatalf("once staged: %d done, starved %v (shared count %d); want 3 and not waiting (0)", got, e.Starved(2), starved.Load())
	}
	if !bytes.Equal(m.B[dst-memBase:dst-memBase+256], m.B[src-memBase:src-memBase+256]) {
		t.Error("the copies did not land")
	}
}

// Staged lists what Arm would make available, and arms nothing.
func TestStagedPeeks(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	if errno := e.InitQueue(0, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{{memBase + 0x10000, memBase + 0x20000, 52}, {memBase + 0x10040, memBase + 0x30000, 4}})
	tx, rx := e.Staged(0, 8)
	if len(tx) != 2 || len(rx) != 2 || tx[0].Len() != 52 || rx[1].Addr != memBase+0x30000 {
		t.Fatalf("staged %+v %+v", tx, rx)
	}
	if tx, _ := e.Staged(0, 1); len(tx) != 1 {
		t.Errorf("limit 1 gave %d", len(tx))
	}
	if st := e.QueueState(0, TX); st.Tail != 0 {
		t.Errorf("peeking moved the tail to %d", st.Tail)
	}
}
