package fs_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func word32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// waitWord polls a mapped word until it reads want.
func waitWord(t *testing.T, what string, p *uint32, want uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint32(p) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s reads %d, want %d", what, atomic.LoadUint32(p), want)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// A probe of the peer route (docs/collectives.md) on a
// trn2.48xlarge and a trn3.48xlarge: a queue of device 0 copies 4 KiB into device 1's HBM
// and adds 5 to its core-0 semaphore 100 through the neighbour window of
// the link to device 1, then writes its own completion marker; host
// stores into device 1's mapped TPB and TopSP semaphore windows act; the
// TopSP NQ rules hold.
func TestPeerDMAProbe(t *testing.T) {
	for _, inst := range []string{"trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) { testPeerDMAProbe(t, inst) })
	}
}

func testPeerDMAProbe(t *testing.T, instance string) {
	dir, sys := testutil.Mount(t, instance)
	a, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := runtime.Host{Root: dir}.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if nb, _ := a.ConnectedDevices(); !slices.Equal(nb, []uint32{12, 1, 3, 4}) {
		t.Errorf("device 0 connected_devices %v", nb)
	}
	if nb, _ := b.ConnectedDevices(); !slices.Equal(nb, []uint32{0, 13, 5, 2}) {
		t.Errorf("device 1 connected_devices %v", nb)
	}
	link, err := a.Link(1)
	if err != nil || link != 1 {
		t.Fatalf("link to device 1: %d %v", link, err)
	}

	dst := mustMem(t, b, 4096, runtime.AllocOptions{})
	src := mustMem(t, a, 4096, runtime.AllocOptions{})
	five := mustMem(t, a, 4096, runtime.AllocOptions{})
	pattern := make([]byte, 4096)
	for i := range pattern {
		pattern[i] = byte(i*7 + 3)
	}
	if err := src.Write(0, pattern); err != nil {
		t.Fatal(err)
	}
	if err := five.Write(0, word32(5)); err != nil {
		t.Fatal(err)
	}
	marker, err := a.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	peerDst, err := a.PeerAddress(link, dst.PA)
	if err != nil {
		t.Fatal(err)
	}
	sem, _ := b.SemaphoreAddress(0, 100, runtime.SemInc)
	peerSem, _ := a.PeerAddress(link, sem)
	if err := b.SemaphoreWrite(0, 100, 0); err != nil {
		t.Fatal(err)
	}
	q, err := a.InitQueue(0, 15, 64, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Submit([]runtime.Copy{{Src: src.PA, Dst: peerDst, Len: 4096}, {Src: five.PA, Dst: peerSem, Len: 4}, marker.Copy()}); err != nil {
		t.Fatal(err)
	}
	waitMarker(t, marker)
	got := make([]byte, 4096)
	if err := dst.Read(0, got); err != nil || !bytes.Equal(got, pattern) {
		t.Errorf("device 1 HBM after the peer copy: %v, equal %v", err, bytes.Equal(got, pattern))
	}
	if own := make([]byte, 16); src.Read(0, own) == nil && !bytes.Equal(own, pattern[:16]) {
		t.Error("the source changed")
	}
	if v, err := b.SemaphoreRead(0, 100); err != nil || v != 5 {
		t.Errorf("device 1 semaphore 100 after the remote increment: %d %v, want 5", v, err)
	}
	if v, _ := a.SemaphoreRead(0, 100); v != 0 {
		t.Errorf("device 0 semaphore 100 = %d: the increment landed locally", v)
	}
	if tx, rx, err := q.State(); err != nil || tx.HeadPointer != 3 || rx.HeadPointer != 3 || rx.HWStatus != 0 {
		t.Errorf("queue after the probe: TX %+v RX %+v %v", tx, rx, err)
	}

	// The proxy's nec_inc_semaphore: a bare store into the mapped INCR view.
	m, err := b.MapResource(uint32(dhal.BlockTPB), 0, uint32(dhal.ResourceSemaphore))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	mword := func(m []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	atomic.StoreUint32(mword(m, 0x1800+4*100), 3)
	if v, err := b.SemaphoreRead(0, 100); err != nil || v != 8 {
		t.Errorf("semaphore 100 after a mapped +3: %d %v, want 8", v, err)
	}
	if v := atomic.LoadUint32(mword(m, 0x1000+4*100)); v != 8 {
		t.Errorf("READ view %d, want 8", v)
	}
	ts, err := b.MapResource(uint32(dhal.BlockTopSP), 0, uint32(dhal.ResourceSemaphore))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(ts)
	atomic.StoreUint32(mword(ts, 0x1800+4*6), 2)
	waitWord(t, "TopSP 0 semaphore 6", mword(ts, 0x1000+4*6), 2)

	// TopSP notification queues (nq_dev_type 1): ts < 16, power-of-two
	// sizes, no third device type (the driver's ENOSYS arrives as ENOTTY:
	// FUSE rewrites it, docs/commands/notifications.md).
	nq := func(v ioctl.NotificationsInitV2, want unix.Errno) {
		t.Helper()
		r, e := testutil.Ioctl(b.Fd(), ioctl.CmdNotificationsInitV2, &v)
		expectErrno(t, "NOTIFICATIONS_INIT_V2", r, e, 0, want)
		if want == 0 && v.MmapOffset == 0 {
			t.Errorf("TopSP NQ %+v has no mmap offset", v)
		}
	}
	nq(ioctl.NotificationsInitV2{NQDevID: 15, NQDevType: ioctl.NQDevTypeTopSP, NQType: ioctl.NQTypeError, Size: 4096, OnHostMemory: 1}, 0)
	// The ring a collective runtime drains at every finalize is valid and
	// empty: bound to its NOTIFIC slot (engine 0) with the tail at 0, and
	// no record in it.
	v := ioctl.NotificationsInitV2{NQDevID: 15, NQDevType: ioctl.NQDevTypeTopSP, NQType: ioctl.NQTypeError, Size: 4096, OnHostMemory: 1}
	if r, e := testutil.Ioctl(b.Fd(), ioctl.CmdNotificationsInitV2, &v); r != 0 || e != 0 {
		t.Fatalf("TopSP NQ again: %d %v", r, e)
	}
	ring, err := unix.Mmap(b.Fd(), int64(v.MmapOffset), 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(ring)
	if !bytes.Equal(ring, make([]byte, 4096)) {
		t.Error("a fresh TopSP ring holds records")
	}
	blk := sys.Arch.TopSPNotificationBlock(15)
	regs, err := b.ReadRegisters(blk+dhal.NQSlotBaseLoOffset, blk+dhal.NQSlotBaseHiOffset, blk+dhal.NQSlotSizeOffset, blk+dhal.NQSlotTailOffset)
	if err != nil {
		t.Fatal(err)
	}
	if pa := uint64(regs[1])<<32 | uint64(regs[0]); pa != v.MmapOffset || regs[2] != 4096 || regs[3] != 0 {
		t.Errorf("TopSP 15 slot 0 registers base %#x size %d tail %d, want %#x 4096 0", pa, regs[2], regs[3], v.MmapOffset)
	}
	nq(ioctl.NotificationsInitV2{NQDevID: 16, NQDevType: ioctl.NQDevTypeTopSP, NQType: ioctl.NQTypeError, Size: 4096, OnHostMemory: 1}, unix.EINVAL)
	nq(ioctl.NotificationsInitV2{NQDevID: 0, NQDevType: 2, NQType: ioctl.NQTypeError, Size: 4096, OnHostMemory: 1}, unix.ENOTTY)
	nq(ioctl.NotificationsInitV2{NQDevID: 0, NQDevType: ioctl.NQDevTypeTopSP, NQType: ioctl.NQTypeError, Size: 3000, OnHostMemory: 1}, unix.EINVAL)
}

// A descriptor aimed at a neighbour that is not there (a single-device
// trn2) aborts its queue with a write error, as any unreachable address.
func TestPeerDMAAbsentNeighbour(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.3xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	src := mustMem(t, dev, 4096, runtime.AllocOptions{})
	peer, err := dev.PeerAddress(0, src.PA)
	if err != nil {
		t.Fatal(err)
	}
	q, err := dev.InitQueue(3, 2, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Submit([]runtime.Copy{{Src: src.PA, Dst: peer, Len: 64}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		tx, rx, err := q.State()
		if err != nil {
			t.Fatal(err)
		}
		if rx.SWStatus == uint32(dma.QueueAborted) {
			if rx.HWStatus&dma.StatusWriteError == 0 || rx.HeadPointer != 0 {
				t.Errorf("aborted queue: TX %+v RX %+v", tx, rx)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the queue never aborted: TX %+v RX %+v", tx, rx)
		}
		time.Sleep(time.Millisecond)
	}
}

// The exec doorbell of device 0's core 1 rung without an ioctl: by a DMA
// of device 1 into its inference-start INCR window through the neighbour
// window, and by a store into that window mapped by the host. Each runs
// the staged exec DMA and the engines' START/END records.
func TestPeerAndMappedDoorbell(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	c := newExecClient(t, dir, 1, 1024)
	src, dst := mustMem(t, c.dev, 4096, runtime.AllocOptions{Host: true}), mustMem(t, c.dev, 8192, runtime.AllocOptions{Core: 1})
	view := mustMap(t, src)
	copy(view, "staged before the doorbell")

	peer, err := runtime.Host{Root: dir}.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	link, err := peer.Link(0)
	if err != nil {
		t.Fatal(err)
	}
	one := mustMem(t, peer, 4096, runtime.AllocOptions{})
	if err := one.Write(0, word32(1)); err != nil {
		t.Fatal(err)
	}
	sem, _ := c.dev.SemaphoreAddress(1, inferenceStart, runtime.SemInc)
	bell, err := peer.PeerAddress(link, sem)
	if err != nil {
		t.Fatal(err)
	}
	q, err := peer.InitQueue(2, 7, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	c.stage([]runtime.Copy{{Src: src.PA, Dst: dst.PA, Len: 32}})
	if err := q.Submit([]runtime.Copy{{Src: one.PA, Dst: bell, Len: 4}}); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordStart)
	c.expect(runtime.RecordEnd)
	got := make([]byte, 32)
	if err := dst.Read(0, got); err != nil || !bytes.Equal(got, view[:32]) {
		t.Errorf("the staged copy after a remote doorbell: %q %v", got, err)
	}

	m, err := c.dev.MapResource(uint32(dhal.BlockTPB), 1, uint32(dhal.ResourceSemaphore))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	c.stage([]runtime.Copy{{Src: src.PA, Dst: dst.PA + 4096, Len: 32}})
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&m[0x1800+4*inferenceStart])), 1)
	c.expect(runtime.RecordStart)
	c.expect(runtime.RecordEnd)
	if err := dst.Read(4096, got); err != nil || !bytes.Equal(got, view[:32]) {
		t.Errorf("the staged copy after a mapped doorbell: %q %v", got, err)
	}
}
