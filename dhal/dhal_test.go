package dhal

import (
	"reflect"
	"testing"
	"time"
)

func mustFacts(t *testing.T, a Arch) *ArchFacts {
	t.Helper()
	f, err := Facts(a)
	if err != nil {
		t.Fatalf("Facts(%v): %v", a, err)
	}
	return f
}

func TestArchAndPlatformStrings(t *testing.T) {
	for a, want := range map[Arch]string{V2: "v2", V3: "v3", V4: "v4", 7: "Arch(7)"} {
		if got := a.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint32(a), got, want)
		}
	}
	if PlatformStandard != 0 || PlatformUltraServer != 1 || PlatformPDS != 2 {
		t.Error("platform values must equal the driver enum")
	}
	if PlatformUltraServer.String() != "ultraserver" {
		t.Errorf("got %q", PlatformUltraServer.String())
	}
}

func TestFactsUnknownArch(t *testing.T) {
	if _, err := Facts(1); err == nil {
		t.Error("Facts(1) should fail (Inf1 support was removed)")
	}
}

func TestFactsCounts(t *testing.T) {
	type counts struct {
		cores, dies, topsps, engPerDev, engSlots, engReset, hbm, nqTypes int
		coreMap                                                          uint32
		wait                                                             time.Duration
	}
	want := map[Arch]counts{
		V2: {2, 1, 6, 34, 132, 32, 2, 6, 0x3, 120 * time.Second},
		V3: {8, 2, 16, 132, 132, 128, 4, 5, 0xff, 480 * time.Second},
		V4: {8, 2, 16, 132, 132, 128, 4, 5, 0xff, 480 * time.Second},
	}
	for a, w := range want {
		f := mustFacts(t, a)
		got := counts{f.CoresPerDevice, f.DiesPerDevice, f.TopSPsPerDevice, f.DMAEnginesPerDevice,
			f.DMAEngineSlots, f.DMAEnginesResetOnExit, f.HBMChannels, f.NQTypes, f.ActiveCoreMap,
			f.ResetInitiateMaxWait}
		if got != w {
			t.Errorf("%v: got %+v, want %+v", a, got, w)
		}
		if f.Arch != a || f.SemaphoresPerCore != 256 || f.EventsPerCore != 256 ||
			f.DMAEnginesPerCore != 16 || f.QueuesPerEngine != 16 || f.NQQueuesPerType != 16 {
			t.Errorf("%v: common counts wrong: %+v", a, f)
		}
		if len(f.HBMBases) != f.HBMChannels {
			t.Errorf("%v: %d HBM bases for %d channels", a, len(f.HBMBases), f.HBMChannels)
		}
		if f.ActiveCoreMap != 1<<f.CoresPerDevice-1 {
			t.Errorf("%v: core map %#x does not cover %d cores", a, f.ActiveCoreMap, f.CoresPerDevice)
		}
	}
}

func TestFactsAddresses(t *testing.T) {
	v2, v3, v4 := mustFacts(t, V2), mustFacts(t, V3), mustFacts(t, V4)
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"v2 host base", v2.HostBase, 0x100000000000},
		{"v3 host base", v3.HostBase, 0x400000000000},
		{"v4 host base", v4.HostBase, 0x400000000000},
		{"v2 hbm size", v2.HBMSize, 0x400000000},
		{"v3 hbm size", v3.HBMSize, 0x600000000},
		{"v4 hbm size", v4.HBMSize, 0x900000000},
		{"v2 misc ram", v2.MiscRAMBar0, 0x30fa0000},
		{"v3 misc ram", v3.MiscRAMBar0, 0x6c84000},
		{"v4 misc ram", v4.MiscRAMBar0, 0x6c84000},
		{"v2 misc ram dev", v2.MiscRAMDevice, 0xffff0fa0000},
		{"v3 misc ram dev", v3.MiscRAMDevice, 0x8006c84000},
		{"v2 tpb 1", v2.TPBBase(1), 0x4000000},
		{"v3 tpb 0", v3.TPBBase(0), 0xd0000000},
		{"v3 core 7 events", v3.TPBBase(7) + TPBEventsOffset, 0xee700000},
		{"v3 core 7 sem read", v3.TPBBase(7) + TPBSemReadOffset, 0xee701000},
		{"v2 nq core 1", v2.NotificationBlock(1), 0x30c35000},
		{"v3 nq core 5", v3.NotificationBlock(5), 0x46181000},
		{"v4 nq core 7", v4.NotificationBlock(7), 0x46581000},
		{"v2 ts nq 5", v2.TopSPNotificationBlock(5), 0x30e04000 + 5*0x40000},
		{"v3 ts nq 7", v3.TopSPNotificationBlock(7), 0x6a00000 + 7*0x40000},
		{"v3 ts nq 8", v3.TopSPNotificationBlock(8), 0x46a00000},
		{"v3 ts nq 15", v3.TopSPNotificationBlock(15), 0x46a00000 + 7*0x40000},
		{"v2 ts win 5", v2.TopSPWindow(5), 0x10000000 + 5*0x400000},
		{"v3 ts win 8", v3.TopSPWindow(8), 0xf2800000},
		{"nq slot 3", NQSlot(0x6001000, 3), 0x6001000 + 0x100 + 3*0x28},
		{"bad core", v2.TPBBase(2), InvalidOffset},
		{"bad nq", v3.NotificationBlock(-1), InvalidOffset},
		{"bad ts", v3.TopSPNotificationBlock(16), InvalidOffset},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	wantBases := map[Arch][]uint64{
		V2: {0x0, 0x1000000000},
		V3: {0x0, 0x4000000000, 0x800000000000, 0x804000000000},
		V4: {0x0, 0x4000000000, 0x800000000000, 0x804000000000},
	}
	for a, w := range wantBases {
		if got := mustFacts(t, a).HBMBases; !reflect.DeepEqual(got, w) {
			t.Errorf("%v HBM bases = %#x, want %#x", a, got, w)
		}
	}
	if v3.PodLinkEngines != [2][2]int{{36, 68}, {4, 100}} || v4.PodLinkEngines != [2][2]int{{40, 72}, {8, 104}} {
		t.Errorf("pod link engines: v3 %v v4 %v", v3.PodLinkEngines, v4.PodLinkEngines)
	}
}

// Every register block the facts name must lie inside the chosen BAR0 size.
func TestBAR0SizeCoversBlocks(t *testing.T) {
	for _, a := range []Arch{V2, V3, V4} {
		f := mustFacts(t, a)
		var offs []uint64
		for c := 0; c < f.CoresPerDevice; c++ {
			offs = append(offs, f.TPBBase(c)+TPBWindowSize-1, f.NotificationBlock(c))
		}
		for ts := 0; ts < f.TopSPsPerDevice; ts++ {
			offs = append(offs, f.TopSPWindow(ts)+TopSPWindowSize-1, f.TopSPNotificationBlock(ts))
		}
		offs = append(offs, f.MiscRAMBar0+0x1000)
		for _, o := range offs {
			if o >= f.BAR0Size {
				t.Errorf("%v: offset %#x beyond BAR0 size %#x", a, o, f.BAR0Size)
			}
		}
	}
}

func TestH2T(t *testing.T) {
	v2, v3 := mustFacts(t, V2), mustFacts(t, V3)
	if v2.H2TEngine(0) != 32 || v2.H2TEngine(1) != 33 || v2.H2TDefaultQueue(1) != 0 {
		t.Errorf("v2 h2t: %d %d q%d", v2.H2TEngine(0), v2.H2TEngine(1), v2.H2TDefaultQueue(1))
	}
	for c := 0; c < 8; c++ {
		if v3.H2TEngine(c) != 128+c/2 || v3.H2TDefaultQueue(c) != c%2 {
			t.Errorf("v3 core %d: engine %d queue %d", c, v3.H2TEngine(c), v3.H2TDefaultQueue(c))
		}
	}
	if v3.H2TEngine(8) != -1 || v2.H2TDefaultQueue(-1) != -1 {
		t.Error("out-of-range core should give -1")
	}
}

func TestFactsAreCopies(t *testing.T) {
	f := mustFacts(t, V3)
	f.HBMBases[1] = 42
	f.coreNQ[0] = 42
	g := mustFacts(t, V3)
	if g.HBMBases[1] != 0x4000000000 || g.NotificationBlock(0) != 0x6001000 {
		t.Error("modifying one Facts result changed another")
	}
}

func TestProducts(t *testing.T) {
	want := []Product{
		{"Trn1", V2, 0x1d0f, 0x7164, "NDv2", "NCv2", "Trn1", "Trainium1"},
		{"Inf2", V2, 0x1d0f, 0x7264, "NDv3", "NCv2", "Inf2", "Inferentia2"},
		{"Trn2", V3, 0x1d0f, 0x7364, "NDv3", "NCv3", "Trn2", "Trainium2"},
		{"Trn3", V4, 0x1d0f, 0x7564, "NDv4", "NCv4", "Trn3", "Trainium3"},
	}
	for _, w := range want {
		p, err := LookupProduct(w.Name)
		if err != nil || *p != w {
			t.Errorf("LookupProduct(%s) = %+v, %v; want %+v", w.Name, p, err, w)
		}
		q, err := ProductForPCI(w.PCIVendor, w.PCIDevice)
		if err != nil || q.Name != w.Name {
			t.Errorf("ProductForPCI(%04x) = %+v, %v", w.PCIDevice, q, err)
		}
	}
	if p, err := ProductForPCI(0x1d0f, 0x7565); err != nil || p.Name != "Trn3" || p.PCIDevice != 0x7565 {
		t.Errorf("second Trn3 id: %+v, %v", p, err)
	}
	for _, id := range []uint16{0x7064, 0x1234} {
		if _, err := ProductForPCI(0x1d0f, id); err == nil {
			t.Errorf("ProductForPCI(%04x) should fail", id)
		}
	}
}

func TestBDFString(t *testing.T) {
	if s := (BDF{Domain: 0, Bus: 0x10, Slot: 0x1c, Func: 0}).String(); s != "0000:10:1c.0" {
		t.Errorf("got %q", s)
	}
	if s := (BDF{Domain: 1, Bus: 0xcc, Slot: 0, Func: 3}).String(); s != "0001:cc:00.3" {
		t.Errorf("got %q", s)
	}
}

func TestDMARouting(t *testing.T) {
	cases := []struct {
		arch       Arch
		pa         uint64
		host       bool
		eng, queue int
		nx         bool
	}{
		{V2, 0x100000001000, true, 0, 14, true},
		{V2, 0x1100000001000, false, 10, 14, true}, // other route bits set: not host on V2
		{V2, 0x1000000000, false, 11, 14, false},
		{V2, 0x0, false, 16, 13, false},
		{V3, 0x400000001000, true, 7, 14, true},
		{V3, 0x4400000001000, true, 5, 14, false}, // V3 looks at bit 46 only
		{V3, 0x804000000000, false, 24, 14, true},
		{V4, 0x400000000000, true, 127, 14, false},
	}
	for _, c := range cases {
		f, err := Facts(c.arch)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.IsHostAddress(c.pa); got != c.host {
			t.Errorf("%v IsHostAddress(%#x) = %v, want %v", c.arch, c.pa, got, c.host)
		}
		if got := f.IsNXQueue(c.eng, c.queue); got != c.nx {
			t.Errorf("%v IsNXQueue(%d, %d) = %v, want %v", c.arch, c.eng, c.queue, got, c.nx)
		}
	}
}

func TestBAR0WriteBlocked(t *testing.T) {
	misc := []uint64{0x1f0, 0x1f4, 0x1f8, 0x1fc, 0x800}
	cases := []struct {
		arch    Arch
		off     uint64
		blocked bool
	}{
		{V2, 0x30000000 + 0x1000 + 0x28, true},              // engine 0, M2S queue 0 ring base low
		{V2, 0x30700000 + 0x21000 + 15*0x1000 + 0x38, true}, // engine 16, S2M queue 15 doorbell
		{V2, 0x30d00000 + 0x1000 + 3*0x1000 + 0x48, true},   // H2D engine, completion base high
		{V2, 0x30000000 + 0x1000 + 0x20, false},             // queue cfg is writable
		{V2, 0x30000000 + 0x204, false},                     // engine change-state
		{V2, 0x30fa0000 + 0x800, true},                      // FW-IO doorbell
		{V2, 0x30fa0000 + 0x808, false},
		{V3, 0xb4000000 + 31*0x100000 + 0x21000 + 0x2c, true}, // engine 127
		{V3, 0x46900000 + 0x1000 + 0x44, true},                // engine 131
		{V3, 0x6c84000 + 0x1fc, true},
		{V3, 0x82000000 + 0x1000 + 0x30, false}, // ring length
		{V4, 0xa2000000 + 0x1000 + 0x38, true},
	}
	for _, c := range cases {
		f, _ := Facts(c.arch)
		if got := f.IsBAR0WriteBlocked(c.off, misc); got != c.blocked {
			t.Errorf("%v %#x blocked = %v, want %v", c.arch, c.off, got, c.blocked)
		}
	}
	f2, _ := Facts(V2)
	f3, _ := Facts(V3)
	if len(f2.udmaBase) != f2.DMAEnginesPerDevice || len(f3.udmaBase) != f3.DMAEnginesPerDevice {
		t.Fatal("one UDMA base per hardware engine")
	}
	for _, f := range []*ArchFacts{f2, f3} {
		for e := range f.DMAEnginesPerDevice {
			if b := f.UDMABase(e); b+UDMABlockSize > f.BAR0Size {
				t.Errorf("%v engine %d block %#x outside BAR0", f.Arch, e, b)
			}
		}
	}
}

func TestProgramRegions(t *testing.T) {
	f2, _ := Facts(V2)
	f4, _ := Facts(V4)
	cases := []struct {
		f    *ArchFacts
		addr uint64
		n    uint64
		ok   bool
	}{
		{f2, 0xfffc0000000, 0x8000000, true},
		{f2, 0xfffc0000000, 0x8000001, false},
		{f2, 0xfffd0000000 + 0x17ffffc, 4, true},
		{f2, 0x0, 4, false}, // HBM is not on V2's list
		{f4, 0x804000000000 + 0x900000000 - 8, 8, true},
		{f4, 0x804000000000 + 0x900000000 - 8, 9, false},
		{f4, 0x808280000000 + 9*0x40000000, 0x400000, true},
		{f4, 0x805200000000, 0x34c0000, true},
		{f4, ^uint64(0) - 3, 8, false}, // wraps
	}
	for _, c := range cases {
		if got := c.f.ProgramRegion(c.addr, c.n); got != c.ok {
			t.Errorf("%v ProgramRegion(%#x, %#x) = %v, want %v", c.f.Arch, c.addr, c.n, got, c.ok)
		}
	}
}

// Every device's BARs lie in windows of their own: BAR0 the register
// block DEVICE_INFO sizes, BAR4 every HBM channel, none overlapping.
func TestPCIBARs(t *testing.T) {
	for _, a := range []Arch{V2, V3, V4} {
		f := mustFacts(t, a)
		var spans []Range
		for dev := 0; dev < MaxDevicesFor(a); dev++ {
			bars := f.PCIBARs(dev)
			if len(bars) != 2 || bars[0].Index != 0 || bars[0].Size != f.BAR0Size || bars[1].Index != 4 || bars[1].Size < f.HBMSize*uint64(f.HBMChannels) {
				t.Fatalf("%v device %d: BARs %+v", a, dev, bars)
			}
			for _, b := range bars {
				if b.Base%b.Size != 0 {
					t.Errorf("%v device %d: BAR%d %#x not aligned to its size %#x", a, dev, b.Index, b.Base, b.Size)
				}
				for _, s := range spans {
					if b.Base < s.Base+s.Size && s.Base < b.Base+b.Size {
						t.Errorf("%v device %d: BAR%d %#x overlaps %+v", a, dev, b.Index, b.Base, s)
					}
				}
				spans = append(spans, Range{b.Base, b.Size})
			}
		}
	}
}

// Every core's default h2t queue is the driver's, and only those: V3/V4
// cores share an engine two by two, on queues 0 and 1.
func TestIsDefaultH2T(t *testing.T) {
	for _, a := range []Arch{V2, V3, V4} {
		f := mustFacts(t, a)
		defaults := 0
		for eng := range f.DMAEnginesPerDevice {
			for q := range 16 {
				if f.IsDefaultH2T(eng, q) {
					defaults++
				}
			}
		}
		if defaults != f.CoresPerDevice {
			t.Errorf("%v: %d default h2t queues, want one per core (%d)", a, defaults, f.CoresPerDevice)
		}
		for c := range f.CoresPerDevice {
			if !f.IsDefaultH2T(f.H2TEngine(c), f.H2TDefaultQueue(c)) {
				t.Errorf("%v: core %d's own queue is not a default", a, c)
			}
		}
		if f.IsDefaultH2T(f.H2TEngine(0), f.H2TDefaultQueue(0)+2) {
			t.Errorf("%v: queue %d of the h2t engine counted as a default", a, f.H2TDefaultQueue(0)+2)
		}
	}
}

// A CSR address names a DMA queue register through the BAR0 layout: on
// V2 BAR0 is one window at 0xfffc0000000 (misc RAM agrees with it).
func TestCSRQueueRegister(t *testing.T) {
	v2, _ := Facts(V2)
	v3, _ := Facts(V3)
	for _, tc := range []struct {
		f        *ArchFacts
		addr     uint64
		eng, qid int
		s2m      bool
		reg      uint64
		ok       bool
	}{
		{v2, 0xffff0001038, 0, 0, false, UDMAQueueTailInc, true},                      // core 0 engine 0, M2S queue 0
		{v2, 0xffff0721038 + 0x40000 + 3*0x1000, 17, 3, true, UDMAQueueTailInc, true}, // core 1 engine 1, S2M queue 3
		{v2, 0xffff0fa0000, 0, 0, false, 0, false},                                    // misc RAM: no queue
		{v3, 0x8082000000 + 0x100000 + 0x2038, 1, 1, false, UDMAQueueTailInc, true},
		{v3, 0x8082000000 + 0x200, 0, 0, false, 0, false}, // engine registers, not a queue's
	} {
		off, ok := tc.f.CSROffset(tc.addr)
		if !ok {
			t.Errorf("%v %#x: outside the register space", tc.f.Arch, tc.addr)
			continue
		}
		eng, qid, s2m, reg, ok := tc.f.UDMAQueueRegister(off)
		if ok != tc.ok || ok && (eng != tc.eng || qid != tc.qid || s2m != tc.s2m || reg != tc.reg) {
			t.Errorf("%v %#x: engine %d queue %d s2m %v reg %#x ok %v; want %d %d %v %#x %v", tc.f.Arch, tc.addr, eng, qid, s2m, reg, ok, tc.eng, tc.qid, tc.s2m, tc.reg, tc.ok)
		}
	}
	for _, f := range []*ArchFacts{v2, v3} {
		if _, ok := f.CSROffset(f.HBMBases[0]); ok {
			t.Errorf("%v: HBM is register space", f.Arch)
		}
	}
}

// Every Q7 core's IRAM and DRAM lie inside the TPB window, past the
// semaphore area, and do not overlap.
func TestQ7PoolFitsTheTPBWindow(t *testing.T) {
	for _, a := range []Arch{V2, V3, V4} {
		f, err := Facts(a)
		if err != nil {
			t.Fatal(err)
		}
		g := f.Q7Pool()
		last := g.DRAMOffset(g.Cores-1) + g.DRAM + g.DRAMReserved
		if g.Base < TPBEventsOffset+TPBSemaphoreArea || last > TPBWindowSize || g.DRAMOffset(0) < g.IRAMOffset(0)+g.IRAM || g.IRAMOffset(1) < g.DRAMOffset(0)+g.DRAM {
			t.Errorf("arch %d: Q7 RAMs %#x..%#x", a, g.Base, last)
		}
	}
}
