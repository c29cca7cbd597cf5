package device

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device/mempool"
)

// ReapRaw punches what the backing holds outside chunks (live, or freed
// under a pin), special resources, PROGRAM_ENGINE regions and the ranges
// kept, and nothing inside them.
func TestReapRaw(t *testing.T) {
	s, err := NewSystem(Config{Instance: "trn2.3xlarge", Backing: Backing{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := s.Devices[0]
	fd := d.chip.PhysFd()
	alloc := func(req mempool.AllocRequest) *mempool.Chunk {
		c, err := d.mem.pool.Alloc(req)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const page = 4096
	fill := func(pa, n uint64, b byte) {
		if _, err := unix.Pwrite(fd, bytes.Repeat([]byte{b}, int(n)), int64(pa)); err != nil {
			t.Fatal(err)
		}
	}
	holds := func(pa, n uint64, b byte) bool {
		got := make([]byte, n)
		if _, err := unix.Pread(fd, got, int64(pa)); err != nil {
			t.Fatal(err)
		}
		return bytes.Count(got, []byte{b}) == int(n)
	}
	live := alloc(mempool.AllocRequest{Size: 1 << 20, Channel: 1, Lifespan: mempool.LifespanCurProcess, PID: 10})
	pinned := alloc(mempool.AllocRequest{Size: 1 << 20, Channel: 1, Lifespan: mempool.LifespanCurProcess, PID: 10})
	if !d.mem.pool.Pin(pinned) {
		t.Fatal("pin failed")
	}
	if d.mem.pool.Free(pinned, 10) {
		t.Fatal("a pinned chunk reported ready to discard")
	}
	res := s.Arch.MmapResources()[0]
	rawA := live.PA + 64<<20 // no chunk there
	rawKept := rawA + 8<<20
	for _, r := range []struct {
		pa, n uint64
		b     byte
	}{{live.PA, live.Size, 1}, {pinned.PA, pinned.Size, 2}, {res.Offset, page, 3}, {rawA, 4 << 20, 4}, {rawKept, 2 << 20, 5}} {
		fill(r.pa, r.n, r.b)
	}
	before := d.RawHeld()
	if before != 6<<20 {
		t.Fatalf("raw memory held: %d, want %d", before, 6<<20)
	}
	if n := d.ReapRaw([]RawRange{{Start: rawKept, End: rawKept + 2<<20}}); n != 4<<20 {
		t.Errorf("punched %d, want %d", n, 4<<20)
	}
	for _, c := range []struct {
		what  string
		pa, n uint64
		b     byte
	}{
		{"a live chunk", live.PA, live.Size, 1},
		{"a chunk freed under a pin", pinned.PA, pinned.Size, 2},
		{"a special resource", res.Offset, page, 3},
		{"a kept raw range", rawKept, 2 << 20, 5},
		{"raw memory", rawA, 4 << 20, 0},
	} {
		if !holds(c.pa, c.n, c.b) {
			t.Errorf("%s [%#x, +%#x) does not hold %#x after a pass", c.what, c.pa, c.n, c.b)
		}
	}
	if got := d.RawHeld(); got != 2<<20 {
		t.Errorf("raw memory held after the pass: %d, want the kept %d", got, 2<<20)
	}
	// Unpinned, the freed chunk is raw like the rest.
	if !d.mem.pool.Unpin(pinned) {
		t.Fatal("the last unpin of a freed chunk did not report discard")
	}
	if n := d.ReapRaw(nil); n != 3<<20 {
		t.Errorf("second pass punched %d, want %d", n, 3<<20)
	}
}
