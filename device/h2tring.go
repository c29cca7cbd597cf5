package device

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// driverRing is a core's default h2t queue as the driver runs it: rings
// of 8192 descriptors in host memory that the driver fills and rings,
// and per DMA context a completion marker, the driver's scheme: the last
// pair of a copy moves 0xabcdef01 from one host word to the next, and
// the driver polls the second word.
type driverRing struct {
	eng, qid int
	tx, rx   *mempool.Chunk
	marks    *mempool.Chunk // per context: the marker source word, then its destination
	compl    *mempool.Chunk // async completion queue (driver 2.27), else nil

	mu     lockrank.Mutex[lockrank.DriverRing]
	next   uint32
	ringID uint8
}

const (
	completionMarker = 0xabcdef01
	markerStride     = 8 // bytes per context in the marker chunk
	// minCopyWait is the least a driver copy waits before giving up; the
	// driver's budget grows with the descriptor count.
	minCopyWait = time.Second
)

// init programs every core's default h2t queue with its rings.
func (t *h2tTable) init(d *Device) error {
	t.d = d
	t.claims = map[[2]int]*h2tClaim{}
	f := d.sys.Arch
	t.driverRings = make([]*driverRing, f.CoresPerDevice)
	for c := range f.CoresPerDevice {
		r := &driverRing{eng: f.H2TEngine(c), qid: f.H2TDefaultQueue(c), ringID: dmadesc.InitialRingID}
		for _, p := range []**mempool.Chunk{&r.tx, &r.rx, &r.marks} {
			size := uint64(h2tRingDescs * dmadesc.Size)
			if p == &r.marks {
				size = 4096
			}
			ch, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: size, Host: true, NCID: uint32(c), MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
			if err != nil {
				return err
			}
			*p = ch
		}
		var err error
		if r.compl, err = t.newAsyncComplQueue(); err != nil {
			return err
		}
		spec := func(ch *mempool.Chunk) dma.RingSpec { return dma.RingSpec{Base: ch.PA, Size: h2tRingDescs} }
		if errno := d.chip.Engine(r.eng).InitQueue(r.qid, spec(r.tx), spec(r.rx)); errno != 0 {
			return errno
		}
		t.driverRings[c] = r
	}
	return nil
}

// markerWord returns a word of context ctx's marker (0 source, 1 result).
func (r *driverRing) markerWord(d *Device, ctx, which int) (*uint32, bool) {
	b, ok := d.chip.Mem().Slice(r.marks.PA+uint64(ctx*markerStride+4*which), 4)
	if !ok {
		return nil, false
	}
	return (*uint32)(unsafe.Pointer(&b[0])), true
}

// copy queues size bytes from src to dst (physical addresses) in 64 KiB
// descriptors, followed by context ctx's marker pair, and rings the
// queue. It returns the number of descriptors it used.
func (r *driverRing) copy(d *Device, ctx int, dst, src, size uint64) (int, bool) {
	srcWord, ok1 := r.markerWord(d, ctx, 0)
	dstWord, ok2 := r.markerWord(d, ctx, 1)
	if !ok1 || !ok2 {
		return 0, false
	}
	atomic.StoreUint32(srcWord, completionMarker)
	atomic.StoreUint32(dstWord, 0)
	var pairs [][3]uint64
	for off := uint64(0); off < size; off += dmadesc.MaxDescLen {
		pairs = append(pairs, [3]uint64{src + off, dst + off, min(size-off, dmadesc.MaxDescLen)})
	}
	markSrc := r.marks.PA + uint64(ctx*markerStride)
	pairs = append(pairs, [3]uint64{markSrc, markSrc + 4, 4})
	r.mu.Lock()
	defer r.mu.Unlock()
	txRing, ok1 := d.chip.Mem().Slice(r.tx.PA, h2tRingDescs*dmadesc.Size)
	rxRing, ok2 := d.chip.Mem().Slice(r.rx.PA, h2tRingDescs*dmadesc.Size)
	if !ok1 || !ok2 {
		return 0, false
	}
	for _, p := range pairs {
		tx, rx := dmadesc.CopyPair(p[0], p[1], uint32(p[2]&dmadesc.LenMask), r.ringID)
		tx.Put(txRing[r.next*dmadesc.Size:])
		rx.Put(rxRing[r.next*dmadesc.Size:])
		if r.next++; r.next == h2tRingDescs {
			r.next, r.ringID = 0, (r.ringID+1)&3
		}
	}
	n := uint32(len(pairs))
	if errno := d.chip.Engine(r.eng).Doorbell(r.qid, n, n); errno != 0 {
		return 0, false
	}
	return len(pairs), true
}

// wait polls context c's marker until the copy landed or the driver's
// budget for n descriptors ran out (-1). Nothing ends it early: the
// driver polls with udelay and never looks at signals. The marker is left
// in place (the next copy on the context clears it), so every waiter of
// the same copy sees it.
func (r *driverRing) wait(d *Device, c int, n int) Result {
	word, ok := r.markerWord(d, c, 1)
	if !ok {
		return Errno(syscall.EPERM)
	}
	lockrank.AssertUnlocked("DMA completion wait")
	deadline := time.Now().Add(max(minCopyWait, time.Duration(n)*80*time.Millisecond))
	for spins := 0; atomic.LoadUint32(word) != completionMarker; spins++ {
		if spins < 64 {
			continue
		}
		if time.Now().After(deadline) {
			return Errno(syscall.EPERM) // the driver's -1 on a DMA timeout
		}
		time.Sleep(20 * time.Microsecond)
	}
	return 0
}
