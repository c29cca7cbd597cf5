package dma

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/internal/memtest"
)

const memBase = 0x10000

func newTestEngine(t *testing.T, size int, opts Options) (*Engine, *memtest.Flat) {
	t.Helper()
	m := memtest.New(memBase, size)
	return NewEngine(3, m, opts), m
}

func waitIdle(t *testing.T, e *Engine, qid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.WaitIdle(ctx, qid); err != nil {
		t.Fatalf("queue %d never went idle: %v", qid, err)
	}
}

// putPairs writes copy pairs into the two rings starting at index first,
// with the ring id each slot carries on lap `lap` (lap 0 = ring id 1).
func putPairs(m *memtest.Flat, txRing, rxRing uint64, size uint32, first uint32, pairs [][3]uint64) {
	for i, p := range pairs {
		idx := (first + uint32(i)) % size
		lap := (first + uint32(i)) / size
		tx, rx := dmadesc.CopyPair(p[0], p[1], uint32(p[2]), uint8(dmadesc.InitialRingID+lap))
		b, _ := m.Slice(txRing+uint64(idx)*dmadesc.Size, dmadesc.Size)
		tx.Put(b)
		b, _ = m.Slice(rxRing+uint64(idx)*dmadesc.Size, dmadesc.Size)
		rx.Put(b)
	}
}

func TestCopyThroughRings(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	src, dst := uint64(memBase+0x10000), uint64(memBase+0x80000)
	for i := range 0x30000 {
		m.B[src-memBase+uint64(i)] = byte(i * 7)
	}
	if errno := e.InitQueue(2, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	// Two full 64 KiB descriptors and a 0x10000-length one encoded as 0.
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{
		{src, dst, 0x8000}, {src + 0x8000, dst + 0x8000, 0}, {src + 0x18000, dst + 0x18000, 0x18000 & 0xffff},
	})
	if errno := e.Doorbell(2, 3, 3); errno != 0 {
		t.Fatal(errno)
	}
	waitIdle(t, e, 2)
	if got, want := m.B[dst-memBase:dst-memBase+0x18000+0x8000], m.B[src-memBase:src-memBase+0x20000]; !bytes.Equal(got, want) {
		t.Fatal("destination differs from source")
	}
	st := e.QueueState(2, TX)
	if st.Head != 3 || st.Tail != 3 || st.SWStatus != uint32(QueueEnabled) || st.HWStatus != 0 || st.Completed != 3 {
		t.Fatalf("TX state after the copy: %+v", st)
	}
}

func TestRingWrapAdvancesRingID(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	src, dst := uint64(memBase+0x10000), uint64(memBase+0x20000)
	if errno := e.InitQueue(0, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	// Three laps of 30 copies each: 90 descriptors through a 32-slot ring.
	next := uint32(0)
	for lap := range 3 {
		var pairs [][3]uint64
		for i := range 30 {
			k := uint64(lap*30 + i)
			m.B[src-memBase+k] = byte(k + 1)
			pairs = append(pairs, [3]uint64{src + k, dst + k, 1})
		}
		putPairs(m, txRing, rxRing, 32, next, pairs)
		if errno := e.Doorbell(0, 30, 30); errno != 0 {
			t.Fatal(errno)
		}
		waitIdle(t, e, 0)
		next += 30
	}
	for k := range 90 {
		if m.B[dst-memBase+uint64(k)] != byte(k+1) {
			t.Fatalf("byte %d not copied", k)
		}
	}
	if st := e.QueueState(0, RX); st.Head != 90%32 || st.HWStatus != 0 {
		t.Fatalf("RX state: %+v", st)
	}
}

func TestStaleRingIDStopsUnlessMasked(t *testing.T) {
	for _, masked := range []bool{false, true} {
		e, m := newTestEngine(t, 1<<20, Options{RingIDErrorsMasked: masked})
		const txRing, rxRing = memBase, memBase + 0x1000
		m.B[0x8000] = 0x5a
		// Written with lap 1's ring id while the queue expects lap 0's.
		putPairs(m, txRing, rxRing, 32, 32, [][3]uint64{{memBase + 0x8000, memBase + 0x9000, 1}})
		if errno := e.InitQueue(1, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
			t.Fatal(errno)
		}
		e.Doorbell(1, 1, 1)
		waitIdle(t, e, 1)
		st := e.QueueState(1, TX)
		copied := m.B[0x9000] == 0x5a
		if masked && (!copied || st.HWStatus != 0) {
			t.Errorf("masked: copied=%v state %+v", copied, st)
		}
		if !masked && (copied || st.HWStatus&StatusRingIDError == 0 || st.SWStatus != uint32(QueueAborted)) {
			t.Errorf("unmasked: copied=%v state %+v", copied, st)
		}
	}
}

func TestBadAddressAborts(t *testing.T) {
	errs := make(chan uint32, 1)
	e, m := newTestEngine(t, 1<<20, Options{OnError: func(eng, qid int, status uint32) { errs <- status }})
	const txRing, rxRing = memBase, memBase + 0x1000
	// A destination one byte past the end of memory: nothing may change.
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{{memBase + 0x8000, memBase + 1<<20 - 0x10, 0x11}})
	before := bytes.Clone(m.B)
	if errno := e.InitQueue(4, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	e.Doorbell(4, 1, 1)
	waitIdle(t, e, 4)
	if !bytes.Equal(before, m.B) {
		t.Error("a failed transfer changed memory")
	}
	if st := e.State(); st.RX != dmadesc.StateAbort || st.TX != dmadesc.StateNormal {
		t.Errorf("engine state after a write error: %+v", st)
	}
	if st := e.QueueState(4, RX); st.SWStatus != uint32(QueueAborted) || st.HWStatus&StatusWriteError == 0 || st.Head != 0 {
		t.Errorf("queue state after a write error: %+v", st)
	}
	select {
	case s := <-errs:
		if s&StatusWriteError == 0 {
			t.Errorf("error callback status %#x", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("no error callback")
	}
	// Normal state and a fresh init bring the queue back.
	e.SetState(dmadesc.StateNormal)
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{{memBase + 0x8000, memBase + 0x9000, 0x10}})
	e.InitQueue(4, RingSpec{txRing, 32}, RingSpec{rxRing, 32})
	e.Doorbell(4, 1, 1)
	waitIdle(t, e, 4)
	if st := e.QueueState(4, RX); st.Head != 1 || st.HWStatus != 0 {
		t.Errorf("queue state after recovery: %+v", st)
	}
}

func TestPacketSpansDescriptors(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	for i := range 300 {
		m.B[0x8000+i] = byte(i)
	}
	// One packet of two TX descriptors (100 + 200 bytes) into RX
	// descriptors of 250 and 250 bytes: the second RX gets 50 and ends
	// with the packet.
	w := func(ringBase uint64, idx int, d dmadesc.Desc) {
		b, _ := m.Slice(ringBase+uint64(idx)*dmadesc.Size, dmadesc.Size)
		d.Put(b)
	}
	id := uint32(dmadesc.InitialRingID) << dmadesc.RingIDShift
	w(txRing, 0, dmadesc.Desc{LenCtrl: 100 | id | dmadesc.FlagFirst, Addr: memBase + 0x8000})
	w(txRing, 1, dmadesc.Desc{LenCtrl: 200 | id | dmadesc.FlagLast, Addr: memBase + 0x8000 + 100})
	w(rxRing, 0, dmadesc.Desc{LenCtrl: 250 | id, Addr: memBase + 0x9000})
	w(rxRing, 1, dmadesc.Desc{LenCtrl: 250 | id, Addr: memBase + 0xa000})
	e.InitQueue(0, RingSpec{txRing, 32}, RingSpec{rxRing, 32})
	e.Doorbell(0, 2, 2)
	waitIdle(t, e, 0)
	if !bytes.Equal(m.B[0x9000:0x9000+250], m.B[0x8000:0x8000+250]) || !bytes.Equal(m.B[0xa000:0xa000+50], m.B[0x8000+250:0x8000+300]) {
		t.Fatal("packet not scattered into the RX descriptors")
	}
	if m.B[0xa000+50] != 0 {
		t.Fatal("bytes beyond the packet were written")
	}
	if st := e.QueueState(0, RX); st.Head != 2 {
		t.Fatalf("RX head %d, want 2", st.Head)
	}
}

func TestInitQueueValidation(t *testing.T) {
	e, _ := newTestEngine(t, 1<<16, Options{})
	cases := []struct {
		tx, rx RingSpec
		want   syscall.Errno
	}{
		{RingSpec{0x100, 32}, RingSpec{0x1000, 32}, 0},
		{RingSpec{0x180, 32}, RingSpec{0x1000, 32}, syscall.EPERM}, // TX base not 256-aligned
		{RingSpec{0x100, 40}, RingSpec{0x1000, 32}, syscall.EPERM}, // size not a multiple of 16
		{RingSpec{0x100, 32}, RingSpec{0x1010, 32}, syscall.EPERM},
		{RingSpec{0x100, 16}, RingSpec{0x1000, 32}, syscall.EINVAL}, // too small
		{RingSpec{0x100, 32}, RingSpec{0x1000, MaxRingDescs + 16}, syscall.EINVAL},
		{RingSpec{0, 0}, RingSpec{0x1000, 32}, syscall.EINVAL}, // no TX ring: the count is still checked
	}
	for _, c := range cases {
		if got := e.InitQueue(0, c.tx, c.rx); got != c.want {
			t.Errorf("InitQueue(%+v, %+v) = %v, want %v", c.tx, c.rx, got, c.want)
		}
	}
	if got := e.InitQueue(16, RingSpec{0x100, 32}, RingSpec{0x1000, 32}); got != syscall.EINVAL {
		t.Errorf("qid 16: %v", got)
	}
	// An RX size error leaves TX programmed.
	e.InitQueue(5, RingSpec{0x100, 32}, RingSpec{0x1000, 16})
	if r := e.Ring(5, TX); r.Base != 0x100 || r.Size != 32 {
		t.Errorf("TX after an RX error: %+v", r)
	}
	if got := e.Doorbell(0, 33, 1); got != syscall.EPERM {
		t.Errorf("doorbell beyond the ring: %v", got)
	}
}

// Arm finds descriptors written past the tail by their ring id, across a
// wrap, and never re-runs last lap's.
func TestArmByRingID(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	if errno := e.InitQueue(0, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	if tx, rx := e.Arm(0); tx != 0 || rx != 0 {
		t.Fatalf("an empty ring armed %d/%d", tx, rx)
	}
	next := uint32(0)
	for round, n := range []uint32{20, 20, 5} {
		var pairs [][3]uint64
		for i := range n {
			k := uint64(round*100) + uint64(i)
			m.B[0x8000+k] = byte(k + 1)
			pairs = append(pairs, [3]uint64{memBase + 0x8000 + k, memBase + 0x9000 + k, 1})
		}
		putPairs(m, txRing, rxRing, 32, next, pairs)
		if tx, rx := e.Arm(0); tx != n || rx != n {
			t.Fatalf("round %d armed %d/%d, want %d", round, tx, rx, n)
		}
		waitIdle(t, e, 0)
		next += n
		for i := range n {
			k := uint64(round*100) + uint64(i)
			if m.B[0x9000+k] != byte(k+1) {
				t.Fatalf("round %d byte %d not copied", round, i)
			}
		}
		if tx, _ := e.Arm(0); tx != 0 {
			t.Fatalf("round %d: executed descriptors armed again (%d)", round, tx)
		}
	}
}

// A tail increment makes descriptors available on one side only and the
// worker moves them once both sides have some; an increment larger than
// the ring or a queue out of range is refused.
func TestTailIncrement(t *testing.T) {
	e, m := newTestEngine(t, 1<<20, Options{})
	const txRing, rxRing = memBase, memBase + 0x1000
	src, dst := uint64(memBase+0x10000), uint64(memBase+0x20000)
	for i := range 64 {
		m.B[src-memBase+uint64(i)] = byte(i + 1)
	}
	if errno := e.InitQueue(1, RingSpec{txRing, 32}, RingSpec{rxRing, 32}); errno != 0 {
		t.Fatal(errno)
	}
	putPairs(m, txRing, rxRing, 32, 0, [][3]uint64{{src, dst, 64}})
	if !e.TailIncrement(1, TX, 1) {
		t.Fatal("TX increment refused")
	}
	waitIdle(t, e, 1)
	if st := e.QueueState(1, TX); st.Tail != 1 || st.Completed != 0 {
		t.Fatalf("TX side %+v after the TX increment alone, want tail 1 and nothing done", st)
	}
	if !e.TailIncrement(1, RX, 1) {
		t.Fatal("RX increment refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for e.QueueState(1, RX).Completed != 1 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	waitIdle(t, e, 1)
	if !bytes.Equal(m.B[dst-memBase:dst-memBase+64], m.B[src-memBase:src-memBase+64]) {
		t.Error("the copy did not land")
	}
	if e.TailIncrement(1, TX, 33) || e.TailIncrement(QueuesPerEngine, TX, 1) || e.TailIncrement(-1, RX, 1) {
		t.Error("an impossible increment was taken")
	}
}
