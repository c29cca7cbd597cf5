package mempool

import (
	"errors"
	"syscall"
	"testing"
)

func newTable(limit uint64) *handleTable {
	t := &handleTable{}
	t.init(limit)
	return t
}

func TestHandleTableOrder(t *testing.T) {
	tb := newTable(HandleTableSize)
	cs := make([]*Chunk, 5)
	for i := range cs {
		cs[i] = &Chunk{}
		h, err := tb.alloc(cs[i])
		if err != nil || h != uint64(i+1) {
			t.Fatalf("alloc %d: handle %d, %v (want %d)", i, h, err, i+1)
		}
	}
	// Released indices come back last-in first-out, then the table grows.
	for _, h := range []uint64{2, 4, 3} {
		if err := tb.release(h); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []uint64{3, 4, 2, 6, 7} {
		h, err := tb.alloc(&Chunk{})
		if err != nil || h != want {
			t.Fatalf("got handle %d, %v; want %d", h, err, want)
		}
	}
}

func TestHandleTableRejects(t *testing.T) {
	tb := newTable(HandleTableSize)
	c := &Chunk{}
	h, _ := tb.alloc(c)
	if tb.find(h) != c {
		t.Fatal("lookup of a live handle failed")
	}
	for _, bad := range []uint64{0, 2, handleL2Size + 1, 5 * handleL2Size, HandleTableSize - 1, HandleTableSize, 1 << 40, ^uint64(0)} {
		if tb.find(bad) != nil {
			t.Errorf("find(%d) returned a chunk", bad)
		}
		if err := tb.release(bad); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("release(%d) = %v, want ENOENT", bad, err)
		}
	}
	if err := tb.release(h); err != nil {
		t.Fatal(err)
	}
	if tb.find(h) != nil {
		t.Fatal("released handle still resolves")
	}
	if err := tb.release(h); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("double release = %v, want ENOENT", err)
	}
}

func TestHandleTableCrossesLevelTwo(t *testing.T) {
	tb := newTable(HandleTableSize)
	var last uint64
	for i := 0; i < handleL2Size+10; i++ {
		h, err := tb.alloc(&Chunk{})
		if err != nil {
			t.Fatal(err)
		}
		last = h
	}
	if last != handleL2Size+10 || tb.find(handleL2Size) == nil || tb.find(handleL2Size+10) == nil {
		t.Fatalf("last handle %d; entries around the level-2 boundary missing", last)
	}
	if tb.l1[2] != nil {
		t.Fatal("level-2 table allocated before it was needed")
	}
}

func TestHandleTableExhaustionTakesItDown(t *testing.T) {
	// The driver refuses to hand out the last index and then stays down.
	tb := newTable(5)
	var hs []uint64
	for i := 0; i < 3; i++ {
		h, err := tb.alloc(&Chunk{})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if _, err := tb.alloc(&Chunk{}); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("alloc of the last index = %v, want ENOENT", err)
	}
	if tb.find(hs[0]) != nil {
		t.Fatal("lookups still work after the table went down")
	}
	if err := tb.release(hs[0]); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("release after down = %v", err)
	}
	if _, err := tb.alloc(&Chunk{}); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("alloc after down = %v", err)
	}
}

func TestHandleTableReleasedIndexAvoidsExhaustion(t *testing.T) {
	tb := newTable(5)
	for i := 0; i < 3; i++ {
		tb.alloc(&Chunk{})
	}
	tb.release(2)
	if h, err := tb.alloc(&Chunk{}); err != nil || h != 2 {
		t.Fatalf("reuse: %d, %v", h, err)
	}
}
