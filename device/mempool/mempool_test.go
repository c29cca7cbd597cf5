package mempool

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

func newPool(t testing.TB, a dhal.Arch) (*Pool, *dhal.ArchFacts) {
	t.Helper()
	f, err := dhal.Facts(a)
	if err != nil {
		t.Fatal(err)
	}
	return New(f), f
}

func mustAlloc(t testing.TB, p *Pool, r AllocRequest) *Chunk {
	t.Helper()
	if r.Lifespan == 0 {
		r.Lifespan = LifespanCurProcess
	}
	c, err := p.Alloc(r)
	if err != nil {
		t.Fatalf("Alloc(%+v): %v", r, err)
	}
	return c
}

func wantErr(t testing.TB, err error, e syscall.Errno) {
	t.Helper()
	if !errors.Is(err, e) {
		t.Fatalf("error %v, want %v", err, e)
	}
}

func dev(size uint64) AllocRequest {
	return AllocRequest{Size: size, MemType: MemTypeTensorsDevice, Lifespan: LifespanCurProcess, PID: 100}
}

func TestNewCarveouts(t *testing.T) {
	for _, a := range []dhal.Arch{dhal.V2, dhal.V3, dhal.V4} {
		p, f := newPool(t, a)
		for ch := 0; ch < f.HBMChannels; ch++ {
			cs := p.DeviceChunks(ch)
			if len(cs) != 1 {
				t.Fatalf("%v channel %d: %d chunks after New", a, ch, len(cs))
			}
			c := cs[0]
			if c.PA != f.HBMBases[ch] || c.Size != CarveoutSize || c.VA != f.HBMBases[ch]|DevmemVABit ||
				c.Lifespan != LifespanDevice || c.MemType != MemTypeNcdevDevice || c.NCID != ch || c.PID != 0 {
				t.Fatalf("%v channel %d carve-out: %+v", a, ch, *c)
			}
			if c.MainPoolEnd() != f.HBMBases[ch]+f.HBMSize-SmallPoolSize {
				t.Fatalf("%v channel %d: main pool end %#x", a, ch, c.MainPoolEnd())
			}
		}
		if p.DeviceChunks(f.HBMChannels) != nil || p.DeviceChunks(-1) != nil {
			t.Fatal("chunks listed for a channel that does not exist")
		}
		if p.Usage() != (UsageSnapshot{}) {
			t.Fatalf("%v: counters not zero after New", a)
		}
	}
}

func TestPlacementSmallAndMain(t *testing.T) {
	p, f := newPool(t, dhal.V3)
	base := f.HBMBases[2]
	smallBase := base + f.HBMSize - SmallPoolSize // 0x8005c0000000

	r := dev(4 * kib)
	r.Channel = 2
	s1 := mustAlloc(t, p, r)
	if s1.PA != smallBase || s1.VA != smallBase|DevmemVABit || s1.Loc != LocDevice {
		t.Fatalf("small chunk at %#x (va %#x), want %#x", s1.PA, s1.VA, smallBase)
	}
	r.Size = SmallAllocMax // still small
	s2 := mustAlloc(t, p, r)
	if s2.PA != smallBase+4*kib {
		t.Fatalf("second small chunk at %#x", s2.PA)
	}
	r.Size = SmallAllocMax + 1 // rounds to 516 KiB: main pool
	m1 := mustAlloc(t, p, r)
	if m1.PA != base+CarveoutSize || m1.Size != SmallAllocMax+Granule {
		t.Fatalf("main chunk at %#x size %#x, want %#x", m1.PA, m1.Size, base+CarveoutSize)
	}
}

func TestExhaustionAndFallback(t *testing.T) {
	p, f := newPool(t, dhal.V3)
	mainFree := f.HBMSize - SmallPoolSize - CarveoutSize
	base := f.HBMBases[0]
	smallBase := base + f.HBMSize - SmallPoolSize

	big := mustAlloc(t, p, dev(mainFree))
	if big.PA != base+CarveoutSize {
		t.Fatalf("main remainder at %#x", big.PA)
	}
	// Main pool full: a large request falls back to the small pool.
	fb := mustAlloc(t, p, dev(SmallPoolSize-64*kib))
	if fb.PA != smallBase {
		t.Fatalf("fallback chunk at %#x, want %#x", fb.PA, smallBase)
	}
	// 64 KiB left in the small pool.
	last := mustAlloc(t, p, dev(64*kib))
	if last.PA != smallBase+SmallPoolSize-64*kib {
		t.Fatalf("last small chunk at %#x", last.PA)
	}
	_, err := p.Alloc(dev(4 * kib))
	wantErr(t, err, syscall.ENOMEM)
	_, err = p.Alloc(dev(2 * mib))
	wantErr(t, err, syscall.ENOMEM)

	// A small request falls back to the main pool when the small one is full.
	release(p, big, 100)
	c := mustAlloc(t, p, dev(4*kib))
	if c.PA != base+CarveoutSize {
		t.Fatalf("small request after main freed at %#x, want main pool start", c.PA)
	}
	// Other channels are untouched.
	r := dev(gib)
	r.Channel = 1
	if c := mustAlloc(t, p, r); c.PA != f.HBMBases[1]+CarveoutSize {
		t.Fatalf("channel 1 chunk at %#x", c.PA)
	}
}

func TestFragmentationThenReuse(t *testing.T) {
	p, f := newPool(t, dhal.V2)
	start := f.HBMBases[1] + CarveoutSize
	r := dev(mib)
	r.Channel = 1
	var cs []*Chunk
	for i := 0; i < 6; i++ {
		cs = append(cs, mustAlloc(t, p, r))
		if cs[i].PA != start+uint64(i)*mib {
			t.Fatalf("chunk %d at %#x", i, cs[i].PA)
		}
	}
	release(p, cs[1], 100)
	release(p, cs[3], 100)
	release(p, cs[4], 100)
	// First fit: 1 MiB reuses the lowest hole, 2 MiB the merged 3..4 hole,
	// 3 MiB goes past the end.
	r.Size = mib
	if c := mustAlloc(t, p, r); c.PA != start+mib {
		t.Fatalf("1 MiB reuse at %#x", c.PA)
	}
	r.Size = 3 * mib
	if c := mustAlloc(t, p, r); c.PA != start+6*mib {
		t.Fatalf("3 MiB at %#x", c.PA)
	}
	r.Size = 2 * mib
	if c := mustAlloc(t, p, r); c.PA != start+3*mib {
		t.Fatalf("2 MiB at %#x", c.PA)
	}
}

func TestAlignment(t *testing.T) {
	p, f := newPool(t, dhal.V3)
	base := f.HBMBases[0]
	a := mustAlloc(t, p, dev(mib)) // at 16 MiB
	r := dev(mib)
	r.Align = 16 * mib
	b := mustAlloc(t, p, r)
	if b.PA != base+32*mib {
		t.Fatalf("16 MiB aligned chunk at %#x", b.PA)
	}
	c := mustAlloc(t, p, dev(mib)) // first fit fills the gap
	if c.PA != a.PA+mib {
		t.Fatalf("unaligned chunk at %#x", c.PA)
	}
	// Alignment <= 4096 is ignored; small aligned requests use the small pool.
	r = dev(8 * kib)
	r.Align = 3
	if c := mustAlloc(t, p, r); c.PA != base+f.HBMSize-SmallPoolSize {
		t.Fatalf("tiny-align chunk at %#x", c.PA)
	}
	r.Align = 64 * kib
	if c := mustAlloc(t, p, r); c.PA != base+f.HBMSize-SmallPoolSize+64*kib {
		t.Fatalf("64 KiB aligned small chunk at %#x", c.PA)
	}
	// The largest accepted alignment, then the first rejected one.
	r = dev(mib)
	r.Align = 1 << 30
	if c := mustAlloc(t, p, r); c.PA != base+gib {
		t.Fatalf("1 GiB aligned chunk at %#x", c.PA)
	}
	r.Align = math.MaxInt32 + 1
	_, err := p.Alloc(r)
	wantErr(t, err, syscall.EINVAL)
	// A non-power-of-two alignment either lands aligned or fails with ENOMEM.
	r.Align = 3 * 4096
	if c, err := p.Alloc(r); err == nil && c.PA%r.Align != 0 {
		t.Fatalf("misaligned chunk %#x returned for align %#x", c.PA, r.Align)
	} else if err != nil {
		wantErr(t, err, syscall.ENOMEM)
	}
}

func TestScratchpad(t *testing.T) {
	p, f := newPool(t, dhal.V3)
	end := f.HBMBases[3] + f.HBMSize - SmallPoolSize
	r := AllocRequest{Size: mib, Channel: 3, MemType: MemTypeContiguousScratchpadDevice,
		Lifespan: LifespanCurProcess, PID: 100}
	s1 := mustAlloc(t, p, r)
	if s1.PA != end-mib || !s1.IsScratchpad() {
		t.Fatalf("first scratchpad at %#x, want %#x", s1.PA, end-mib)
	}
	r.Size = 2 * mib
	s2 := mustAlloc(t, p, r)
	if s2.PA != end-3*mib {
		t.Fatalf("second scratchpad at %#x, want %#x", s2.PA, end-3*mib)
	}
	// Accesses and mappings may run to the end of the main pool.
	if !s2.InBounds(0, 3*mib) || s2.InBounds(0, 3*mib+1) || !s1.InBounds(mib-1, 1) {
		t.Fatal("scratchpad bounds")
	}
	// Alignment is not looked at for scratchpad requests.
	r.Size, r.Align = mib, 1<<40
	s3 := mustAlloc(t, p, r)
	if s3.PA != end-4*mib {
		t.Fatalf("third scratchpad at %#x", s3.PA)
	}

	// Freeing out of LIFO order is accepted, but the next placement then
	// collides with a live scratchpad chunk.
	release(p, s1, 100)
	r.Align = 0
	_, err := p.Alloc(r)
	wantErr(t, err, syscall.ENOMEM)
	release(p, s3, 100)
	release(p, s2, 100)
	if c := mustAlloc(t, p, r); c.PA != end-mib {
		t.Fatalf("scratchpad after all frees at %#x", c.PA)
	}
}

func TestScratchpadBusyAndTooLarge(t *testing.T) {
	p, f := newPool(t, dhal.V2)
	rest := mustAlloc(t, p, dev(f.HBMSize-SmallPoolSize-CarveoutSize))
	r := AllocRequest{Size: 4 * kib, MemType: MemTypeContiguousScratchpadDevice, Lifespan: LifespanCurProcess}
	_, err := p.Alloc(r)
	wantErr(t, err, syscall.ENOMEM)
	release(p, rest, 100)
	// A scratchpad never falls back to the small pool, and a size beyond the
	// main pool wraps the offset and fails.
	r.Size = f.HBMSize
	_, err = p.Alloc(r)
	wantErr(t, err, syscall.ENOMEM)
	r.Size = f.HBMSize - SmallPoolSize - CarveoutSize
	if c := mustAlloc(t, p, r); c.PA != CarveoutSize {
		t.Fatalf("whole-pool scratchpad at %#x", c.PA)
	}
}

func TestHostMemory(t *testing.T) {
	p, f := newPool(t, dhal.V2)
	r := AllocRequest{Size: 100, Host: true, MemType: MemTypeCodeHost, Lifespan: LifespanCurProcess, PID: 7}
	h1 := mustAlloc(t, p, r)
	if h1.PA != f.HostBase|HostRangeStart || h1.VA != 0 || h1.Size != Granule || h1.Loc != LocHost {
		t.Fatalf("host chunk %+v", *h1)
	}
	r.Size = 8 * kib // dma_alloc_coherent aligns to the allocation order
	h2 := mustAlloc(t, p, r)
	r.Size = 12 * kib
	h3 := mustAlloc(t, p, r)
	if h2.PA != f.HostBase|(HostRangeStart+8*kib) || h3.PA != f.HostBase|(HostRangeStart+16*kib) {
		t.Fatalf("host chunks at %#x, %#x", h2.PA, h3.PA)
	}
	r.Size = 4 * kib
	if c := mustAlloc(t, p, r); c.PA != f.HostBase|(HostRangeStart+4*kib) {
		t.Fatalf("host chunk filling the gap at %#x", c.PA)
	}
	if c, ok := p.Containing(h3.PA + 5000); !ok || c != h3 {
		t.Fatal("host chunk not found by PA")
	}
	if cs := p.DeviceChunks(0); len(cs) != 1 {
		t.Fatalf("host chunks listed as device chunks: %d", len(cs))
	}

	r.Align = 4096
	_, err := p.Alloc(r)
	wantErr(t, err, syscall.EINVAL)
	r.Align = 0
	r.Size = HostRangeEnd // more than the emulated range
	_, err = p.Alloc(r)
	wantErr(t, err, syscall.ENOMEM)
	r.Size = 0
	_, err = p.Alloc(r)
	wantErr(t, err, syscall.ENOMEM)
}

func TestValidation(t *testing.T) {
	p, _ := newPool(t, dhal.V2)
	for _, host := range []bool{false, true} {
		r := AllocRequest{Size: 4 * kib, Host: host, Lifespan: LifespanCurProcess}
		r.Channel = 2 // V2 has two channels; checked for host memory too
		_, err := p.Alloc(r)
		wantErr(t, err, syscall.EINVAL)
		r.Channel = 1
		r.NCID = 8
		_, err = p.Alloc(r)
		wantErr(t, err, syscall.EINVAL)
		r.NCID = 7 // not checked against the real core count
		c := mustAlloc(t, p, r)
		if c.NCID != 7 || c.Channel != 1 {
			t.Fatalf("chunk %+v", *c)
		}
		r.Size = math.MaxInt64 + 1
		_, err = p.Alloc(r)
		wantErr(t, err, syscall.EINVAL)
		r.Size = math.MaxInt64
		_, err = p.Alloc(r)
		wantErr(t, err, syscall.ENOMEM)
		r.Size = 0
		_, err = p.Alloc(r)
		wantErr(t, err, syscall.ENOMEM)
		r.Size, r.Lifespan = Granule, 0
		_, err = p.Alloc(r)
		wantErr(t, err, syscall.EINVAL)
	}
	// Size is checked before the channel, the channel before nc_id.
	_, err := p.Alloc(AllocRequest{Size: math.MaxUint64, Channel: 9, NCID: 9, Lifespan: LifespanLocal})
	wantErr(t, err, syscall.EINVAL)
}

func TestFaultInjection(t *testing.T) {
	p, _ := newPool(t, dhal.V3)
	p.SetAllocFault(func() bool { return true })
	_, err := p.Alloc(dev(Granule))
	wantErr(t, err, syscall.ENOMEM)
	r := dev(Granule)
	r.Channel = 4 // the channel check comes first
	_, err = p.Alloc(r)
	wantErr(t, err, syscall.EINVAL)
	p.SetAllocFault(nil)
	mustAlloc(t, p, dev(Granule))
}

func TestHandles(t *testing.T) {
	p, _ := newPool(t, dhal.V3)
	a := mustAlloc(t, p, dev(Granule))
	b := mustAlloc(t, p, dev(Granule))
	ha, err := p.Handle(a)
	if err != nil || ha != 1 {
		t.Fatalf("first handle %d, %v", ha, err)
	}
	if again, _ := p.Handle(a); again != ha {
		t.Fatal("Handle assigned twice")
	}
	hb, _ := p.Handle(b)
	if hb != 2 {
		t.Fatalf("second handle %d", hb)
	}
	if c, err := p.Lookup(hb); err != nil || c != b {
		t.Fatalf("Lookup(%d) = %v, %v", hb, c, err)
	}
	for _, h := range []uint64{0, 3, HandleTableSize, HandleTableSize + 1} {
		_, err := p.Lookup(h)
		wantErr(t, err, syscall.EINVAL)
	}
	// Free releases the handle; it is reused for the next chunk.
	if !release(p, a, 100) {
		t.Fatal("Free of a one-reference chunk did not free it")
	}
	_, err = p.Lookup(ha)
	wantErr(t, err, syscall.EINVAL)
	_, err = p.Handle(a)
	wantErr(t, err, syscall.EINVAL)
	if release(p, a, 100) {
		t.Fatal("double Free freed again")
	}
	c := mustAlloc(t, p, dev(Granule))
	if hc, _ := p.Handle(c); hc != ha {
		t.Fatalf("released handle not reused: %d", hc)
	}
	// A slot whose chunk lost its magic is rejected.
	c.magic = deadMagic
	_, err = p.Lookup(ha)
	wantErr(t, err, syscall.EINVAL)
	c.magic = ChunkMagic
}

func TestRefCounts(t *testing.T) {
	p, _ := newPool(t, dhal.V3)
	c := mustAlloc(t, p, dev(Granule))
	h, _ := p.Handle(c)
	p.IncRef(c)
	if release(p, c, 100) {
		t.Fatal("chunk freed with a reference left")
	}
	if got, err := p.Lookup(h); err != nil || got != c {
		t.Fatal("handle gone while the chunk lives")
	}
	if !release(p, c, 100) {
		t.Fatal("last reference did not free")
	}
	if _, ok := p.Containing(c.PA); ok {
		t.Fatal("freed chunk still found by PA")
	}
}

func TestFreeExpired(t *testing.T) {
	p, _ := newPool(t, dhal.V3)
	var mine []*Chunk
	for i := 0; i < 3; i++ {
		c := mustAlloc(t, p, dev(Granule))
		p.Handle(c)
		mine = append(mine, c)
	}
	other := dev(Granule)
	other.PID = 200
	theirs := mustAlloc(t, p, other)
	devReq := dev(Granule)
	devReq.Lifespan = LifespanDevice
	devChunk := mustAlloc(t, p, devReq)
	keep := mustAlloc(t, p, dev(Granule)) // extra reference: survives, moves on
	p.IncRef(keep)

	freed := p.FreeExpired(LifespanCurProcess, 100)
	if len(freed) != 3 || freed[0] != mine[2] || freed[1] != mine[1] || freed[2] != mine[0] {
		t.Fatalf("freed %v, want newest first", freed)
	}
	// Handles were released newest first, so they come back oldest first.
	var again []*Chunk
	for i := 1; i <= 3; i++ {
		c := mustAlloc(t, p, dev(Granule))
		if h, _ := p.Handle(c); h != uint64(i) {
			t.Fatalf("handle %d after expiry, want %d", h, i)
		}
		again = append(again, c)
	}
	for _, c := range again {
		release(p, c, 100)
	}
	for _, c := range []*Chunk{theirs, devChunk, keep} {
		if _, ok := p.Containing(c.PA); !ok {
			t.Fatalf("chunk %#x freed by another process's expiry", c.PA)
		}
	}
	if keep.Lifespan != LifespanCurProcess {
		t.Fatal("extended chunk changed its reported lifespan")
	}
	if got := p.FreeExpired(LifespanCurProcess, 100); len(got) != 0 {
		t.Fatalf("second expiry freed %d", len(got))
	}
	if got := p.FreeExpired(LifespanAllProcess, 0); len(got) != 1 || got[0] != keep {
		t.Fatalf("all-process expiry freed %v", got)
	}
	if got := p.FreeExpired(LifespanCurProcess, 200); len(got) != 1 || got[0] != theirs {
		t.Fatalf("pid 200 expiry freed %v", got)
	}
	// Device lifespan: extra references do not keep a chunk alive.
	p.IncRef(devChunk)
	p.IncRef(devChunk)
	got := p.FreeExpired(LifespanDevice, 0)
	if len(got) != 5 { // 4 carve-outs + devChunk
		t.Fatalf("device expiry freed %d chunks", len(got))
	}
	for ch := 0; ch < 4; ch++ {
		if n := len(p.DeviceChunks(ch)); n != 0 {
			t.Fatalf("channel %d still has %d chunks", ch, n)
		}
	}
}

func TestLocalExtendsToCurrentProcess(t *testing.T) {
	p, _ := newPool(t, dhal.V2)
	r := dev(Granule)
	r.Lifespan = LifespanLocal
	c := mustAlloc(t, p, r)
	p.IncRef(c)
	if got := p.FreeExpired(LifespanLocal, 100); len(got) != 0 {
		t.Fatal("referenced local chunk freed")
	}
	if got := p.FreeExpired(LifespanCurProcess, 100); len(got) != 1 || got[0] != c {
		t.Fatalf("extended local chunk not on the process list: %v", got)
	}
}

func TestAccounting(t *testing.T) {
	p, _ := newPool(t, dhal.V3)
	r := AllocRequest{Size: mib, NCID: 3, MemType: MemTypeTensorsDevice, Lifespan: LifespanCurProcess, PID: 100}
	d1 := mustAlloc(t, p, r)
	r.Size = 2 * mib
	d2 := mustAlloc(t, p, r)
	u := p.Usage()
	if s := u.Core[3][CounterDeviceMem]; s != (Stat{3 * mib, 2 * mib, 3 * mib}) {
		t.Fatalf("device_mem %+v", s)
	}
	if s := u.Core[3][CounterDeviceTensors]; s != (Stat{3 * mib, 2 * mib, 3 * mib}) {
		t.Fatalf("tensors %+v", s)
	}

	h := mustAlloc(t, p, AllocRequest{Size: 8 * kib, Host: true, NCID: 2, MemType: MemTypeCodeHost,
		Lifespan: LifespanCurProcess, PID: 100})
	sp := mustAlloc(t, p, AllocRequest{Size: 4 * kib, NCID: 1, MemType: MemTypeContiguousScratchpadDevice,
		Lifespan: LifespanCurProcess, PID: 100})
	unk := mustAlloc(t, p, AllocRequest{Size: 4 * kib, NCID: 1, MemType: 99, Lifespan: LifespanCurProcess})
	unkHost := mustAlloc(t, p, AllocRequest{Size: 4 * kib, Host: true, NCID: 1, MemType: 1 << 31,
		Lifespan: LifespanCurProcess})
	odd := mustAlloc(t, p, AllocRequest{Size: 4 * kib, Host: true, NCID: 5, MemType: MemTypeTensorsDevice,
		Lifespan: LifespanCurProcess})
	u = p.Usage()
	checks := []struct {
		name string
		got  Stat
		want uint64
	}{
		{"core2 host_mem", u.Core[2][CounterHostMem], 8 * kib},
		{"device host dma_buffers", u.Device[CounterHostCode], 8 * kib},
		{"core2 host dma_buffers (not a sysfs slot)", u.Core[2][CounterHostCode], 0},
		{"core1 scratchpad", u.Core[1][CounterDeviceScratchpad], 4 * kib},
		{"core1 device uncategorized", u.Core[1][CounterDeviceUncategorized], 4 * kib},
		{"device host uncategorized", u.Device[CounterHostUncategorized], 4 * kib},
		{"core1 host_mem", u.Core[1][CounterHostMem], 4 * kib},
		{"core1 device_mem", u.Core[1][CounterDeviceMem], 8 * kib},
		{"device-level tensors slot", u.Device[CounterDeviceTensors], 4 * kib},
		{"core5 host_mem", u.Core[5][CounterHostMem], 4 * kib},
	}
	for _, c := range checks {
		if c.got.Total != c.want {
			t.Errorf("%s: total %d, want %d", c.name, c.got.Total, c.want)
		}
	}

	for _, c := range []*Chunk{d1, h, sp, unk, unkHost, odd, d2} {
		release(p, c, 100)
	}
	u = p.Usage()
	if s := u.Core[3][CounterDeviceMem]; s != (Stat{0, 2 * mib, 3 * mib}) {
		t.Fatalf("device_mem after frees %+v (present is the last delta, peak kept)", s)
	}
	for nc := range u.Core {
		for id, s := range u.Core[nc] {
			if s.Total != 0 {
				t.Fatalf("core %d counter %s total %d after frees", nc, Counter(id).SysfsName(), s.Total)
			}
		}
	}
	for id, s := range u.Device {
		if s.Total != 0 {
			t.Fatalf("device counter %d total %d after frees", id, s.Total)
		}
	}
}

func TestResetCounter(t *testing.T) {
	p, _ := newPool(t, dhal.V2)
	c := mustAlloc(t, p, AllocRequest{Size: mib, NCID: 1, MemType: MemTypeCodeDevice, Lifespan: LifespanCurProcess})
	p.ResetCounter(1, CounterDeviceCode, FieldPeak)
	p.ResetCounter(1, CounterDeviceMem, FieldPresent)
	p.ResetCounter(1, CounterDeviceMem, FieldTotal)
	p.ResetCounter(9, CounterDeviceMem, FieldTotal) // ignored
	p.ResetCounter(-1, NumCounters, FieldTotal)     // ignored
	p.ResetCounter(-1, CounterHostCode, Field(7))   // ignored
	u := p.Usage()
	if s := u.Core[1][CounterDeviceCode]; s != (Stat{mib, mib, 0}) {
		t.Fatalf("code after peak reset %+v", s)
	}
	if s := u.Core[1][CounterDeviceMem]; s != (Stat{0, 0, mib}) {
		t.Fatalf("device_mem after resets %+v", s)
	}
	// The driver does not floor the total: a zeroed total wraps on free.
	release(p, c, 0)
	if s := p.Usage().Core[1][CounterDeviceMem]; s.Total != 0-s.Present || s.Present != mib {
		t.Fatalf("device_mem after free %+v", s)
	}
}

func TestCounterNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range HostCategories {
		seen["host/"+c.SysfsName()] = true
	}
	for _, c := range DeviceCategories {
		seen["dev/"+c.SysfsName()] = true
	}
	if len(seen) != 8+11 || !seen["host/dma_buffers"] || !seen["host/application_memory"] ||
		!seen["dev/model_shared_scratchpad"] || !seen["dev/runtime_memory"] || !seen["dev/uncategorized"] {
		t.Fatalf("category names %v", seen)
	}
	if Counter(-1).SysfsName() != "" || NumCounters.SysfsName() != "" {
		t.Fatal("out-of-range counter has a name")
	}
	// Every memory type maps to a counter of its own location family.
	for mt := uint32(0); mt < MemTypeMax; mt++ {
		c := categoryOf(mt, LocDevice)
		isHostType := mt <= MemTypeNotificationHost || mt == MemTypeDMARingsHost
		isHostCounter := c >= CounterHostUncategorized && c <= CounterHostDMARings
		if isHostType != isHostCounter {
			t.Errorf("mem type %d maps to %s", mt, c.SysfsName())
		}
	}
}

func TestPIDUsage(t *testing.T) {
	p, _ := newPool(t, dhal.V3)
	mustAlloc(t, p, AllocRequest{Size: 8 * kib, Host: true, Lifespan: LifespanCurProcess, PID: 100})
	d := mustAlloc(t, p, AllocRequest{Size: mib, Lifespan: LifespanCurProcess, PID: 100})
	if hu, du := p.PIDUsage(100); hu != 8*kib || du != mib {
		t.Fatalf("pid 100 usage %d/%d", hu, du)
	}
	// The driver charges a free to the freeing process, floored at zero.
	release(p, d, 200)
	if hu, du := p.PIDUsage(100); hu != 8*kib || du != mib {
		t.Fatalf("pid 100 usage after a foreign free %d/%d", hu, du)
	}
	if hu, du := p.PIDUsage(200); hu != 0 || du != 0 {
		t.Fatalf("pid 200 usage %d/%d", hu, du)
	}
	d = mustAlloc(t, p, AllocRequest{Size: 2 * mib, Lifespan: LifespanCurProcess, PID: 100})
	p.FreeExpired(LifespanCurProcess, 100)
	if hu, du := p.PIDUsage(100); hu != 0 || du != mib {
		t.Fatalf("pid 100 usage after expiry %d/%d (the foreign free is never repaid)", hu, du)
	}
}

func TestContainingAndDeviceChunks(t *testing.T) {
	p, f := newPool(t, dhal.V3)
	r := dev(mib)
	r.Channel = 1
	a := mustAlloc(t, p, r)
	r.Size = 4 * kib
	b := mustAlloc(t, p, r) // small pool: higher address
	r.Size = 3 * mib
	c := mustAlloc(t, p, r)
	if got, ok := p.Containing(a.PA + mib - 1); !ok || got != a {
		t.Fatal("last byte of a chunk not found")
	}
	if got, ok := p.Containing(c.PA); !ok || got != c {
		t.Fatal("chunk start not found")
	}
	if got, ok := p.Containing(f.HBMBases[1] + 5); !ok || got.Size != CarveoutSize {
		t.Fatal("carve-out not found")
	}
	if _, ok := p.Containing(c.PA + c.Size); ok {
		t.Fatal("address past the last main chunk found")
	}
	list := p.DeviceChunks(1)
	if len(list) != 4 || list[1] != a || list[2] != c || list[3] != b {
		t.Fatalf("channel 1 chunks out of order: %v", list)
	}
	release(p, a, 100)
	if _, ok := p.Containing(a.PA); ok {
		t.Fatal("freed chunk found")
	}
	if len(p.DeviceChunks(1)) != 3 {
		t.Fatal("freed chunk listed")
	}
}

func TestInBoundsPlain(t *testing.T) {
	p, _ := newPool(t, dhal.V2)
	c := mustAlloc(t, p, dev(8*kib))
	if !c.InBounds(0, 8*kib) || !c.InBounds(8*kib, 0) || c.InBounds(1, 8*kib) {
		t.Fatal("plain bounds")
	}
	// No overflow check, as in the driver.
	if !c.InBounds(math.MaxUint64, 2) {
		t.Fatal("wrapping access rejected")
	}
	h := mustAlloc(t, p, AllocRequest{Size: 4 * kib, Host: true, MemType: MemTypeContiguousScratchpadDevice,
		Lifespan: LifespanCurProcess})
	if h.IsScratchpad() || h.MainPoolEnd() != 0 || h.InBounds(0, 4*kib+1) {
		t.Fatal("host chunk treated as scratchpad")
	}
	release(p, h, 0) // host memory of the scratchpad type frees like any host chunk
}

func TestConcurrentUse(t *testing.T) {
	p, f := newPool(t, dhal.V3)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			var mine []*Chunk
			for i := 0; i < 400; i++ {
				if len(mine) > 0 && rng.Intn(3) == 0 {
					k := rng.Intn(len(mine))
					c := mine[k]
					mine = append(mine[:k], mine[k+1:]...)
					h, err := p.Handle(c)
					if err != nil {
						t.Error(err)
						return
					}
					if got, err := p.Lookup(h); err != nil || got != c {
						t.Errorf("lookup of live handle %d: %v", h, err)
						return
					}
					if got, ok := p.Containing(c.PA); !ok || got != c {
						t.Errorf("chunk %#x not found", c.PA)
						return
					}
					if !release(p, c, int32(w+1)) {
						t.Error("free did not free")
						return
					}
					continue
				}
				r := AllocRequest{
					Size:     uint64(1+rng.Intn(256)) * Granule,
					Host:     rng.Intn(4) == 0,
					Channel:  uint32(rng.Intn(f.HBMChannels)),
					NCID:     uint32(rng.Intn(MaxNC)),
					MemType:  uint32(rng.Intn(int(MemTypeMax) + 2)),
					Lifespan: LifespanCurProcess,
					PID:      int32(w + 1),
				}
				if !r.Host && rng.Intn(4) == 0 {
					r.Align = Granule << rng.Intn(8)
				}
				c, err := p.Alloc(r)
				if err != nil {
					// Scratchpad chunks freed out of order make the next
					// scratchpad placement collide; anything else is a bug.
					if !r.Host && r.MemType == MemTypeContiguousScratchpadDevice && errors.Is(err, syscall.ENOMEM) {
						continue
					}
					t.Errorf("Alloc(%+v): %v", r, err)
					return
				}
				mine = append(mine, c)
				_ = p.Usage()
				_ = p.DeviceChunks(int(r.Channel))
			}
			for _, c := range p.FreeExpired(LifespanCurProcess, int32(w+1)) {
				p.Reclaim(c)
			}
		}(w)
	}
	wg.Wait()
	if u := p.Usage(); func() bool {
		for nc := range u.Core {
			for _, s := range u.Core[nc] {
				if s.Total != 0 {
					return false
				}
			}
		}
		for _, s := range u.Device {
			if s.Total != 0 {
				return false
			}
		}
		return true
	}() == false {
		t.Fatal("counters not back to zero")
	}
	for i, ch := range p.channels {
		if len(ch.chunks) != 1 || ch.main.fs.count != 1 || ch.small.fs.count != 1 || ch.scratch != 0 {
			t.Fatalf("channel %d not back to its initial state: %d chunks, %d/%d extents",
				i, len(ch.chunks), ch.main.fs.count, ch.small.fs.count)
		}
	}
	if p.host.pool.fs.count != 1 || len(p.host.ranges) != 0 || len(p.hostList) != 0 || len(p.lists) != 1 || len(p.pidUse) != 0 {
		t.Fatalf("host pool %d extents, %d ranges, %d chunks, %d lists, %d pids", p.host.pool.fs.count, len(p.host.ranges),
			len(p.hostList), len(p.lists), len(p.pidUse))
	}
}

func TestIdleDevicesAreCheap(t *testing.T) {
	f, _ := dhal.Facts(dhal.V3)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pools := make([]*Pool, 16)
	for i := range pools {
		pools[i] = New(f)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grew > 1<<20 {
		t.Fatalf("16 idle V3 devices use %d bytes of heap", grew)
	}
	// A huge allocation costs no more than a small one.
	c := mustAlloc(t, pools[0], dev(20*gib))
	if c.Size != 20*gib || pools[0].channels[0].main.fs.count != 1 {
		t.Fatal("huge allocation")
	}
	runtime.KeepAlive(pools)
}

func BenchmarkAllocFree(b *testing.B) {
	p, _ := newPool(b, dhal.V3)
	// A fragmented pool: many live chunks with holes between them.
	var keep []*Chunk
	for i := 0; i < 20000; i++ {
		c := mustAlloc(b, p, dev(uint64(1+i%7)*Granule))
		if i%2 == 0 {
			keep = append(keep, c)
		} else {
			defer release(p, c, 100)
		}
	}
	for _, c := range keep {
		release(p, c, 100)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := p.Alloc(dev(uint64(8+i%5) * Granule))
		if err != nil {
			b.Fatal(err)
		}
		release(p, c, 100)
	}
}

func ExamplePool() {
	f, _ := dhal.Facts(dhal.V3)
	p := New(f)
	c, _ := p.Alloc(AllocRequest{Size: 1 << 20, Channel: 1, MemType: MemTypeTensorsDevice,
		Lifespan: LifespanCurProcess, PID: 4242})
	h, _ := p.Handle(c)
	fmt.Printf("pa %#x va %#x handle %d\n", c.PA, c.VA, h)
	p.FreeExpired(LifespanCurProcess, 4242)
	_, err := p.Lookup(h)
	fmt.Println(errors.Is(err, syscall.EINVAL))
	// Output:
	// pa 0x4001000000 va 0x8000004001000000 handle 1
	// true
}

// release frees c as the device does: the range is reclaimed at once when
// nothing pins it.
func release(p *Pool, c *Chunk, caller int32) bool {
	if p.Free(c, caller) {
		p.Reclaim(c)
		return true
	}
	return false
}

// A chunk freed while pinned keeps its range until the last unpin, so no
// access lands in memory that was handed to another allocation.
func TestFreeWhilePinned(t *testing.T) {
	f, _ := dhal.Facts(dhal.V2)
	p := New(f)
	c := mustAlloc(t, p, AllocRequest{Size: 1 << 20, Lifespan: LifespanCurProcess, PID: 7})
	if !p.Pin(c) {
		t.Fatal("pin of a live chunk failed")
	}
	if p.Free(c, 7) {
		t.Fatal("a pinned chunk was reported for discard at free")
	}
	if p.Pin(c) {
		t.Fatal("a freed chunk was pinned again")
	}
	if _, ok := p.Containing(c.PA); ok {
		t.Fatal("a freed chunk is still found by address")
	}
	again := mustAlloc(t, p, AllocRequest{Size: 1 << 20, Lifespan: LifespanCurProcess, PID: 8})
	if again.PA == c.PA {
		t.Fatal("the range of a pinned chunk was handed out again")
	}
	if !p.Unpin(c) {
		t.Fatal("the last unpin of a freed chunk did not report discard")
	}
	p.Reclaim(c)
	third := mustAlloc(t, p, AllocRequest{Size: 1 << 20, Lifespan: LifespanCurProcess, PID: 9})
	if third.PA != c.PA {
		t.Fatalf("reclaimed range not reused: got %#x, want %#x", third.PA, c.PA)
	}
}
