package chip

import (
	"encoding/binary"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

// A delivered request is a 52-byte copy followed, on the same queue, by
// a 4-byte copy into a core's event window (SoC or mmap address); any
// other sequence delivers nothing.
func TestExecRequestRecognised(t *testing.T) {
	ch := newTestChip(t, "trn2.48xlarge")
	f := ch.arch
	slot := f.HBMBases[0] + 1<<30
	b, ok := ch.mem.Slice(slot, execRequestSize)
	if !ok {
		t.Fatal("no memory at the slot")
	}
	want := [5]uint64{0x1_2345_6780, 0, 0x40, 0xffff_ffff_0000_0000, 7}
	for e, a := range want {
		binary.LittleEndian.PutUint32(b[execReqAddrLo+4*e:], uint32(a))
		binary.LittleEndian.PutUint32(b[execReqAddrHi+4*e:], uint32(a>>32))
	}
	res, _ := f.LookupMmapResource(dhal.BlockTPB, 3, dhal.ResourceSemaphore)
	soc := f.TPBSoCBase(1) + dhal.TPBEventsOffset
	const eng, q = 5, 2
	for _, c := range []struct {
		name  string
		steps [][3]uint64 // queue, dst, n
		core  int         // -1: nothing delivered
	}{
		{"soc", [][3]uint64{{q, slot, 52}, {q, soc + 4*13, 4}}, 1},
		{"mmap", [][3]uint64{{q, slot, 52}, {q, res.Offset + 4, 4}}, 3},
		{"copy between", [][3]uint64{{q, slot, 52}, {q, slot + 64, 8}, {q, soc, 4}}, -1},
		{"other queue", [][3]uint64{{q, slot, 52}, {q + 1, soc, 4}}, -1},
		{"not an event", [][3]uint64{{q, slot, 52}, {q, soc + ReadWindow, 4}}, -1},
		{"poke alone", [][3]uint64{{q, soc, 4}}, -1},
	} {
		for _, s := range c.steps {
			ch.requests.observe(eng, int(s[0]), 0, s[1], s[2])
		}
		for nc := range f.CoresPerDevice {
			got := ch.Core(nc).takeRequest()
			switch {
			case nc == c.core && (got == nil || got.addr != want):
				t.Errorf("%s: core %d got %+v, want %x", c.name, nc, got, want)
			case nc != c.core && got != nil:
				t.Errorf("%s: core %d got a request", c.name, nc)
			}
		}
		if ch.Core(max(c.core, 0)).takeRequest() != nil {
			t.Errorf("%s: a request taken twice", c.name)
		}
	}
}
