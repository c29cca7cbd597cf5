package device

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/dhal"
)

func word(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// On a trn2.48xlarge and a trn3.48xlarge (V3 and V4), device 0's engines
// reach device 1 through the neighbour window of the link whose
// connected_devices entry is 1: its
// HBM takes the bytes, a core's SoC state buffer is its SBUF resource,
// its semaphore windows (at a core's SoC address or its mmap offset) add,
// subtract and store at once, and an increment of the inference-start
// semaphore rings the peer core's doorbell.
func TestNeighbourWindowReachesPeer(t *testing.T) {
	for _, inst := range []string{"trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) { testNeighbourWindowReachesPeer(t, inst) })
	}
}

func testNeighbourWindowReachesPeer(t *testing.T, instance string) {
	s := newTestSystem(t, instance)
	d0, d1 := s.Devices[0], s.Devices[1]
	f := s.Arch
	link := -1
	for k, n := range s.Instance.Neighbours(0) {
		if n == 1 {
			link = k
		}
	}
	peer := func(local uint64) uint64 {
		a, ok := f.PeerAddress(link, local)
		if !ok {
			t.Fatalf("no neighbour window %d", link)
		}
		return a
	}
	hbm := f.HBMBases[1] + 0x10000
	if !d0.chip.Mem().Write(peer(hbm), []byte("to the neighbour")) {
		t.Fatal("write through the neighbour window refused")
	}
	if got, _ := d1.chip.Mem().Local(hbm, 16); string(got) != "to the neighbour" {
		t.Errorf("device 1 HBM reads %q", got)
	}
	if got, _ := d0.chip.Mem().Slice(peer(hbm), 16); string(got) != "to the neighbour" {
		t.Errorf("read back through the window: %q", got)
	}

	const idx = 100
	inc := f.TPBSoCBase(1) + dhal.TPBSemIncOffset + 4*idx
	for _, w := range []struct {
		addr uint64
		v    uint32
		want uint32
	}{
		{inc, 5, 5},
		{inc, 3, 8},
		{f.TPBSoCBase(1) + dhal.TPBSemDecOffset + 4*idx, 2, 6},
		{f.TPBSoCBase(1) + dhal.TPBSemSetOffset + 4*idx, 40, 40},
	} {
		if !d0.chip.Mem().Write(peer(w.addr), word(w.v)) {
			t.Fatalf("write to %#x refused", w.addr)
		}
		a, _ := d1.chip.Core(1).Area()
		if got := a.Semaphore(idx); got != w.want {
			t.Errorf("after %d at %#x: semaphore %d, want %d", w.v, w.addr, got, w.want)
		}
	}
	if a, _ := d0.chip.Core(1).Area(); a.Semaphore(idx) != 0 {
		t.Error("the issuing device's semaphore changed")
	}
	// Core 1's state buffer at its SoC address is the memory its SBUF
	// resource maps.
	sbuf, _ := f.LookupMmapResource(dhal.BlockTPB, 1, dhal.ResourceSBUF)
	d0.chip.Mem().Write(peer(f.TPBSoCBase(1)+0x100), []byte("sbuf"))
	if got, _ := d1.chip.Mem().Local(sbuf.Offset+0x100, 4); string(got) != "sbuf" {
		t.Errorf("core 1 SBUF resource reads %q after a DMA to its SoC address", got)
	}
	// The mmap offset of core 3's area is an address of its own.
	res, _ := f.LookupMmapResource(dhal.BlockTPB, 3, dhal.ResourceSemaphore)
	d1.chip.Mem().Write(res.Offset+uint64(dhal.TPBSemIncOffset-dhal.TPBEventsOffset)+4*7, word(9))
	if a, _ := d1.chip.Core(3).Area(); a.Semaphore(7) != 9 {
		t.Errorf("core 3 semaphore 7 = %d after a local DMA increment of 9", a.Semaphore(7))
	}
	// TopSP semaphores act the same way (no doorbell behind them).
	ts, _ := f.LookupMmapResource(dhal.BlockTopSP, 15, dhal.ResourceSemaphore)
	d0.chip.Mem().Write(peer(ts.Offset+0x1800+4*2), word(4))
	if a, _ := d1.chip.TopSPSemArea(15); a.Semaphore(2) != 4 {
		t.Errorf("TopSP 15 semaphore 2 = %d after a remote increment of 4", a.Semaphore(2))
	}

	// The doorbell: any semaphore starts the core (InferenceStart unset).
	d0.chip.Mem().Write(peer(f.TPBSoCBase(2)+dhal.TPBSemIncOffset), word(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if n, _, _ := d1.metrics.Value(2, "other_info/inference_count"); n == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("a remote increment of 1 did not run core 2 of device 1")
		}
		time.Sleep(time.Millisecond)
	}
}

// A window with nobody at its end (a single-device trn2) and any peer
// route on V2 (none is documented) are unreachable; V2's own semaphore
// windows act.
func TestNeighbourWindowWithoutPeer(t *testing.T) {
	s := newTestSystem(t, "trn2.3xlarge")
	a, _ := s.Arch.PeerAddress(0, s.Arch.HBMBases[0])
	if s.Devices[0].chip.Mem().Write(a, word(1)) {
		t.Error("a write to an absent neighbour was accepted")
	}
	v2 := newTestSystem(t, "trn1.32xlarge")
	if v2.Arch.PeerLinks() != 0 {
		t.Fatalf("V2 has %d neighbour windows", v2.Arch.PeerLinks())
	}
	if v2.Devices[0].chip.Mem().Write(0x10000000000000, word(1)) {
		t.Error("a V3 neighbour-window address reaches something on V2")
	}
	// A local semaphore write acts on V2 too.
	v2.Devices[0].chip.Mem().Write(v2.Arch.TPBSoCBase(1)+dhal.TPBSemIncOffset+4*9, word(6))
	if a, _ := v2.Devices[0].chip.Core(1).Area(); a.Semaphore(9) != 6 {
		t.Errorf("V2 core 1 semaphore 9 = %d after a DMA increment of 6", a.Semaphore(9))
	}
}
