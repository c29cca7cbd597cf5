package dhal

import "testing"

// Spot checks against the driver's table of mmap resources
// (docs/driver-facts.md).
func TestMmapResources(t *testing.T) {
	cases := []struct {
		arch     Arch
		block    MmapBlock
		id       uint32
		res      MmapResourceKind
		off, sz  uint64
		readOnly bool
	}{
		{V2, BlockTPB, 1, ResourceSemaphore, 0xfffc2700000 + 0x4000000, 0x2000, false},
		{V2, BlockTPB, 0, ResourceSBUF, 0xfffc0000000, 0x2000000, false},
		{V2, BlockTopSP, 5, ResourceAll, 0xfffd0000000 + 5*0x400000, 0x400000, true},
		{V3, BlockTPB, 7, ResourceSemaphore, 0x2002700000 + 7*0x4000000, 0x2000, false},
		{V3, BlockTopSP, 9, ResourceSemaphore, 0x808280000000 + 0x40000000, 0x2000, false},
		{V3, BlockHBM, 2, ResourceDMEM, 0x800000000000, 0x600000000, false},
		{V4, BlockHBM, 3, ResourceDMEM, 0x804000000000, 0x900000000, false},
	}
	for _, c := range cases {
		f, _ := Facts(c.arch)
		r, ok := f.LookupMmapResource(c.block, c.id, c.res)
		if !ok || r.Offset != c.off || r.Size != c.sz || r.ReadOnly != c.readOnly {
			t.Errorf("%v block %d id %d res %d: %+v %v", c.arch, c.block, c.id, c.res, r, ok)
		}
	}
	v2, _ := Facts(V2)
	if _, ok := v2.LookupMmapResource(BlockTPB, 2, ResourceSemaphore); ok {
		t.Error("V2 has no TPB 2")
	}
	if _, ok := v2.LookupMmapResource(BlockHBM, 0, ResourceDMEM); ok {
		t.Error("V2 has no DMEM resource")
	}
	v3, _ := Facts(V3)
	// The highest range is the tenth TOP_SP window of die 1 that
	// PROGRAM_ENGINE may write (the mmap table stops at the eighth).
	if got := v3.PhysicalSpan(); got != 0x808280000000+9*0x40000000+0x400000 {
		t.Errorf("V3 physical span %#x", got)
	}
}
