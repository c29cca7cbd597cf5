package replay

import (
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
)

func TestAddrMap(t *testing.T) {
	var m addrMap
	m.learn(0x1000, 0x9000, 0x2000)
	m.learn(0x8000, 0x8000, 0x1000) // the same here: nothing to learn
	for _, c := range []struct{ in, want uint64 }{
		{0x1000, 0x9000}, {0x2fff, 0xafff}, {0x3000, 0x3000}, {0x0fff, 0x0fff}, {0x8000, 0x8000},
	} {
		if got := m.translate(c.in); got != c.want {
			t.Errorf("translate %#x = %#x, want %#x", c.in, got, c.want)
		}
	}
	// An address that is the same here now drops what the map said.
	m.learn(0x2000, 0x2000, 0x1000)
	if got := m.translate(0x2000); got != 0x2000 {
		t.Errorf("an identity learned over a range still translates: %#x", got)
	}
	// A range learned over an old one replaces it.
	m.learn(0x1800, 0x20000, 0x1000)
	if got := m.translate(0x1000); got != 0x1000 {
		t.Errorf("the replaced range still translates: %#x", got)
	}
	if got := m.translate(0x1900); got != 0x20100 {
		t.Errorf("translate %#x = %#x", 0x1900, got)
	}
}

// With address mapping, an address output the replay gets differently is
// learned, and later inputs and outputs go through it; a reused recorded
// address is learned again. Without it, addresses must match exactly.
func TestCompareAddress(t *testing.T) {
	exact := &state{}
	var res Result
	exact.compareAddress(&res, "pa", 0, 0x100000, 0x5000000, 1<<20)
	if len(res.Diffs) != 1 {
		t.Fatalf("without mapping a different address must differ: %+v", res)
	}

	s := &state{mapAddrs: true}
	res = Result{}
	s.compareAddress(&res, "pa", 0, 0x100000, 0x5000000, 1<<20)
	if len(res.Diffs) != 0 || len(res.NotCompared) != 1 || !strings.Contains(res.NotCompared[0], "new address") {
		t.Fatalf("first sight: %+v", res)
	}
	res = Result{}
	s.compareAddress(&res, "mmap_offset", 0, 0x100000+4096, 0x5000000+4096, 0)
	if len(res.Diffs) != 0 || len(res.NotCompared) != 1 {
		t.Fatalf("inside the learned chunk: %+v", res)
	}
	res = Result{}
	s.compareAddress(&res, "pa", 0x7000, 0x7000, 0x7100, 0)
	if len(res.Diffs) != 1 {
		t.Fatalf("a changed input not reported: %+v", res)
	}
	res = Result{}
	s.compareAddress(&res, "pa", 0, 0x100000, 0, 0)
	if len(res.Diffs) != 1 {
		t.Fatalf("a missing address not reported: %+v", res)
	}
	s.compareAddress(&res, "pa", 0, 0x100000, 0x6000000, 0) // reused in the recording
	if got := s.Addrs.translate(0x100000); got != 0x6000000 {
		t.Fatalf("reused address translates to %#x", got)
	}
	s.Addrs.learn(0x100000, 0x5000000, 1<<20)

	// Descriptors naming the learned chunk are rewritten; others are not.
	tx, _ := dmadesc.CopyPair(0x100000+64, 0x42000, 16, 1)
	other, _ := dmadesc.CopyPair(0x42000, 0x100000, 16, 1)
	buf := make([]byte, 2*dmadesc.Size)
	tx.Put(buf)
	other.Put(buf[dmadesc.Size:])
	s.translateDescriptors(buf)
	if a := dmadesc.Decode(buf).Addr; a != 0x5000000+64 {
		t.Errorf("descriptor address %#x", a)
	}
	if a := dmadesc.Decode(buf[dmadesc.Size:]).Addr; a != 0x42000 {
		t.Errorf("unmapped descriptor address %#x", a)
	}
}
