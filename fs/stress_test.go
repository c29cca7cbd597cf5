package fs_test

import (
	"context"
	"encoding/binary"
	"math/rand"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// The storm's client: one process issuing random valid and invalid calls
// of every command family on a few devices until its time is up or it is
// killed. TestStorm (storm_test.go) runs many of them at once.

func init() {
	helpers["storm"] = func() int {
		seed, _ := strconv.ParseInt(os.Getenv("NEURONFS_SEED"), 10, 64)
		secs, _ := strconv.ParseFloat(os.Getenv("NEURONFS_STORM_SECONDS"), 64)
		cores, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_CORES"))
		engs, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_ENGINES"))
		p := newStormProc(os.Getenv("NEURONFS_ROOT"), seed, cores, engs)
		deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
		for time.Now().Before(deadline) {
			p.step()
		}
		return 0
	}
}

// stormDev is one open normal fd and what this process built on it.
type stormDev struct {
	d     *runtime.Device
	mems  []*stormMem
	sems  [][]byte        // mappings of semaphore resources
	nqs   []*runtime.NQ   // INFER_STATUS rings this fd mapped
	nqFor map[uint32]bool // cores whose INFER_STATUS rings are set up
	exec  map[uint32]*runtime.Queue
	ds    []byte            // datastore mapping
	model [32]byte          // CRWL model id
	crwl  map[uint32]uint32 // core -> CRWL enter command held
}

type stormMem struct {
	m    *runtime.Mem
	view []byte // mapping of the chunk, or nil
}

type stormProc struct {
	rng         *rand.Rand
	h           runtime.Host
	devices     []int // the few devices this process uses
	cores, engs int
	open        []*stormDev
	miscs       []*runtime.Misc
	scratch     []byte // off-heap buffer for copies
	noAccess    []byte // a PROT_NONE page, for bad pointers
}

func newStormProc(root string, seed int64, cores, engs int) *stormProc {
	p := &stormProc{rng: rand.New(rand.NewSource(seed)), h: runtime.Host{Root: root}, cores: max(cores, 1), engs: max(engs, 1)}
	idx, _ := p.h.DeviceIndices()
	if len(idx) == 0 {
		idx = []int{0}
	}
	// Two to four devices: several processes meet on each device, so
	// the exits of some overlap with the calls of others.
	for _, i := range p.rng.Perm(len(idx))[:min(len(idx), 2+p.rng.Intn(3))] {
		p.devices = append(p.devices, idx[i])
	}
	p.scratch, _ = testutil.OffHeap(1 << 20)
	p.noAccess, _ = unix.Mmap(-1, 0, 4096, unix.PROT_NONE, unix.MAP_ANON|unix.MAP_PRIVATE)
	return p
}

func (p *stormProc) pick() *stormDev { return p.open[p.rng.Intn(len(p.open))] }

func (p *stormProc) core() uint32 { return uint32(p.rng.Intn(p.cores)) }

// badPtr returns an address no caller should pass: null, low, unmapped,
// kernel, no access, or running off the end of a mapping.
func (p *stormProc) badPtr() uint64 {
	switch p.rng.Intn(7) {
	case 0:
		return 0
	case 1:
		return uint64(p.rng.Intn(4096))
	case 2:
		return 0xdead0000
	case 3:
		return 0xffff888000000000 + uint64(p.rng.Intn(1<<20))
	case 4:
		return uint64(uintptr(unsafe.Pointer(&p.noAccess[0])))
	case 5:
		return uint64(uintptr(unsafe.Pointer(&p.scratch[len(p.scratch)-8])))
	default:
		return p.rng.Uint64()
	}
}

func (p *stormProc) scratchAddr(n int) (uint64, int) {
	n = min(n, len(p.scratch))
	return uint64(uintptr(unsafe.Pointer(&p.scratch[0]))), n
}

// mem returns a random chunk of d, or nil.
func (p *stormProc) mem(d *stormDev) *stormMem {
	if len(d.mems) == 0 {
		return nil
	}
	return d.mems[p.rng.Intn(len(d.mems))]
}

func (p *stormProc) alloc(d *stormDev) *stormMem {
	if len(d.mems) >= 12 {
		return p.mem(d)
	}
	size := uint64(p.rng.Intn(512<<10) + 1)
	m, err := d.d.Alloc(size, runtime.AllocOptions{Host: p.rng.Intn(2) == 0, Channel: uint32(p.rng.Intn(2)), Core: p.core()})
	if err != nil {
		return nil
	}
	sm := &stormMem{m: m}
	d.mems = append(d.mems, sm)
	return sm
}

// closeDev forgets what lives on d (the driver frees it at the last
// close) and closes it. Mappings go first: stores into a chunk freed
// under them would hit nothing this process owns.
func (p *stormProc) closeDev(i int) {
	d := p.open[i]
	for _, m := range d.mems {
		if m.view != nil {
			unix.Munmap(m.view)
		}
	}
	for _, s := range d.sems {
		unix.Munmap(s)
	}
	for _, q := range d.nqs {
		q.Close()
	}
	if d.ds != nil {
		unix.Munmap(d.ds)
	}
	d.d.Close()
	p.open = append(p.open[:i], p.open[i+1:]...)
}

func (p *stormProc) openDev() {
	if len(p.open) >= 4 {
		return
	}
	dev, err := p.h.Open(p.devices[p.rng.Intn(len(p.devices))])
	if err != nil {
		return
	}
	d := &stormDev{d: dev, nqFor: map[uint32]bool{}, exec: map[uint32]*runtime.Queue{}, crwl: map[uint32]uint32{}}
	d.model[0] = byte(p.rng.Intn(3))
	p.open = append(p.open, d)
}

// step runs one random call (or a short sequence that belongs together).
func (p *stormProc) step() {
	if len(p.open) == 0 {
		p.openDev()
		if len(p.open) == 0 {
			return
		}
	}
	d := p.pick()
	switch op := p.rng.Intn(30); op {
	case 0:
		p.openDev()
	case 1:
		if len(p.open) > 1 || p.rng.Intn(4) == 0 {
			p.closeDev(p.rng.Intn(len(p.open)))
		}
	case 2, 3:
		p.alloc(d)
	case 4:
		if len(d.mems) > 0 {
			i := p.rng.Intn(len(d.mems))
			m := d.mems[i]
			if m.view != nil {
				unix.Munmap(m.view)
			}
			m.m.Free()
			d.mems = append(d.mems[:i], d.mems[i+1:]...)
		}
	case 5: // MEM_BUF_COPY64 both ways
		if m := p.mem(d); m != nil {
			off := uint64(p.rng.Intn(int(m.m.Size)))
			n := min(int(m.m.Size-off), 64<<10)
			m.m.Write(off, p.scratch[:n])
			m.m.Read(off, p.scratch[:n])
		}
	case 6: // MEM_COPY64
		if a, b := p.mem(d), p.mem(d); a != nil {
			size := uint64(p.rng.Intn(int(min(a.m.Size, b.m.Size)) + 1))
			b.m.CopyFrom(0, a.m, 0, size)
		}
	case 7: // MEMSET64
		if m := p.mem(d); m != nil {
			off := uint64(p.rng.Intn(int(m.m.Size)))
			m.m.Fill(off, uint64(p.rng.Intn(int(m.m.Size-off)+1)), byte(p.rng.Intn(256)))
		}
	case 8: // MEM_COPY_ASYNC64 and its wait
		if a, b := p.mem(d), p.mem(d); a != nil {
			size := uint64(p.rng.Intn(int(min(a.m.Size, b.m.Size))) + 1)
			if ctx, err := b.m.CopyAsync(0, a.m, 0, size, -1); err == nil {
				b.m.WaitCopy(a.m, ctx)
			}
		}
	case 9: // mmap a chunk at its PA and store into it
		if m := p.mem(d); m != nil {
			if m.view == nil {
				m.view, _ = m.m.Map()
			}
			if m.view != nil {
				for range 8 {
					m.view[p.rng.Intn(len(m.view))] = byte(p.rng.Intn(256))
				}
				if p.rng.Intn(3) == 0 {
					unix.Munmap(m.view)
					m.view = nil
				}
			}
		}
	case 10, 11: // a core's semaphore resource, mapped, stores into its windows
		p.semWindows(d)
	case 12, 13, 14: // semaphore ioctls
		p.semaphores(d)
	case 15: // events
		nc, idx := uint32(p.rng.Intn(p.cores+2)), uint32(p.rng.Intn(260))
		if p.rng.Intn(2) == 0 {
			d.d.EventSet(nc, idx, p.rng.Uint32())
		} else {
			d.d.EventGet(nc, idx)
		}
	case 16, 17: // exec doorbells
		p.doorbell(d)
	case 18: // NOTIFICATIONS_INIT_V2, valid and not
		nq := ioctl.NotificationsInitV2{NQDevID: uint32(p.rng.Intn(p.cores + 1)), NQType: uint32(p.rng.Intn(6)), EngineIndex: uint32(p.rng.Intn(17)), Size: 1 << (6 + p.rng.Intn(8)), OnHostMemory: uint32(p.rng.Intn(2))}
		testutil.Ioctl(d.d.Fd(), ioctl.CmdNotificationsInitV2, &nq)
	case 19: // DMA queues and their doorbell
		stressDMA(p.rng, d.d, p.engs*p.cores)
	case 20: // NC_RESET + NC_RESET_READY
		d.d.Reset(uint32(p.rng.Intn(1<<p.cores-1) + 1))
		d.nqFor = map[uint32]bool{}
	case 21: // CRWL reader/writer
		p.crwl(d)
	case 22: // core marks on a free-access fd
		p.marks()
	case 23: // datastore
		p.datastore(d)
	case 24: // pod status, both versions
		d.d.PodStatus()
		v := ioctl.PodStatus{Sz: uint16(ioctl.Sizeof[ioctl.PodStatus]())}
		testutil.Ioctl(d.d.Fd(), ioctl.CmdPodStatus, &v)
	case 25, 26: // garbage commands
		cmd := ioctl.IOC(uint32(p.rng.Intn(4)), ioctl.Magic, uint32(p.rng.Intn(140)), uint32(p.rng.Intn(300)))
		addr, _ := p.scratchAddr(512)
		p.rng.Read(p.scratch[:512])
		if p.rng.Intn(4) == 0 {
			addr = p.badPtr()
		}
		testutil.IoctlAddr(d.d.Fd(), cmd, uintptr(addr))
	case 27, 28: // garbage pointers inside valid structs
		p.badPointers(d)
	case 29: // register traffic
		var info ioctl.DeviceInfo
		testutil.Ioctl(d.d.Fd(), ioctl.CmdDeviceInfo, &info)
		addr, _ := p.scratchAddr(16)
		binary.LittleEndian.PutUint64(p.scratch, info.BARAddress[0]+uint64(p.rng.Intn(1<<20))&^3)
		v := ioctl.BARRW{Count: 1, Address: addr, Data: addr + 8}
		testutil.Ioctl(d.d.Fd(), ioctl.CmdBARRead, &v)
	}
}

// semWindows maps core nc's SEMAPHORE resource (RESOURCE_MMAP_INFO, mmap)
// and stores into its set, increment and decrement windows and events;
// the sweeper and the next semaphore ioctl apply them.
func (p *stormProc) semWindows(d *stormDev) {
	if len(d.sems) == 0 || p.rng.Intn(3) == 0 {
		m, err := d.d.MapResource(uint32(dhal.BlockTPB), p.core(), uint32(dhal.ResourceSemaphore))
		if err != nil {
			return
		}
		d.sems = append(d.sems, m)
	}
	i := p.rng.Intn(len(d.sems))
	m := d.sems[i]
	for range 1 + p.rng.Intn(4) {
		window := []int{0, 0x1400, 0x1800, 0x1800, 0x1c00}[p.rng.Intn(5)]
		off := window + 4*p.rng.Intn(256)
		if off+4 > len(m) {
			continue
		}
		v := uint32(p.rng.Intn(3) + 1)
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&m[off])), v)
	}
	_ = atomic.LoadUint32((*uint32)(unsafe.Pointer(&m[0x1000+4*p.rng.Intn(256)])))
	if p.rng.Intn(4) == 0 {
		unix.Munmap(m)
		d.sems = append(d.sems[:i], d.sems[i+1:]...)
	}
}

func (p *stormProc) semaphores(d *stormDev) {
	nc := p.core()
	if p.rng.Intn(8) == 0 {
		nc = uint32(p.rng.Intn(16)) // a core the device may not have
	}
	idx := uint32(p.rng.Intn(256))
	if p.rng.Intn(16) == 0 {
		idx = uint32(p.rng.Intn(1 << 17))
	}
	v := ioctl.Semaphore{NCID: nc, SemaphoreIndex: idx, Value: uint32(p.rng.Intn(5))}
	cmd := []uint32{ioctl.CmdSemaphoreRead, ioctl.CmdSemaphoreWrite, ioctl.CmdSemaphoreIncrement, ioctl.CmdSemaphoreIncrement, ioctl.CmdSemaphoreDecrement}[p.rng.Intn(5)]
	testutil.Ioctl(d.d.Fd(), cmd, &v)
}

// doorbell rings a core's exec doorbell (SEMAPHORE_INCREMENT by 1 runs,
// by 2 halts), after its INFER_STATUS rings were initialised and
// enabled, sometimes with DMA staged on an exec queue.
func (p *stormProc) doorbell(d *stormDev) {
	nc := p.core()
	if !d.nqFor[nc] {
		for e := range uint32(runtime.ComputeEngines) {
			q, err := d.d.InitNQ(nc, runtime.NQTypeNotify, runtime.InferStatusSlot+e, 64<<p.rng.Intn(3))
			if err != nil {
				return
			}
			d.nqs = append(d.nqs, q)
		}
		if d.d.EnableNQs(nc, 0x1f<<runtime.InferStatusSlot) != nil {
			return
		}
		d.nqFor[nc] = true
	}
	if p.rng.Intn(3) == 0 {
		q := d.exec[nc]
		if q == nil {
			var err error
			q, err = d.d.InitQueue(nc*uint32(p.engs)+uint32(p.rng.Intn(p.engs)), uint32(p.rng.Intn(16)), 64, runtime.AllocOptions{Core: nc})
			if err != nil {
				return
			}
			d.exec[nc] = q
		}
		if a, b := p.mem(d), p.mem(d); a != nil {
			n := uint32(min(a.m.Size, b.m.Size, 4096))
			q.WriteDescriptors(q.Descriptors([]runtime.Copy{{Src: a.m.PA, Dst: b.m.PA, Len: n}}))
		}
	}
	value := uint32(1)
	if p.rng.Intn(8) == 0 {
		value = 2
	}
	d.d.Doorbell(nc, uint32(p.rng.Intn(4)), value)
}

func (p *stormProc) crwl(d *stormDev) {
	nc := p.core()
	if held, ok := d.crwl[nc]; ok {
		if held == ioctl.CmdCRWLWriterEnter {
			// A writer leaves by becoming a reader first.
			d.d.CRWL(ioctl.CmdCRWLWriterDowngrade, nc, d.model)
			d.crwl[nc] = ioctl.CmdCRWLReaderEnter
			if p.rng.Intn(2) == 0 {
				return
			}
		}
		d.d.CRWL(ioctl.CmdCRWLReaderExit, nc, d.model)
		delete(d.crwl, nc)
		return
	}
	enter := ioctl.CmdCRWLReaderEnter
	if p.rng.Intn(3) == 0 {
		enter = ioctl.CmdCRWLWriterEnter
	}
	if d.d.CRWL(enter, nc, d.model) == nil {
		d.crwl[nc] = enter
	}
}

func (p *stormProc) marks() {
	if len(p.miscs) == 0 || p.rng.Intn(3) == 0 {
		m, err := p.h.OpenMisc(p.devices[p.rng.Intn(len(p.devices))])
		if err != nil {
			return
		}
		p.miscs = append(p.miscs, m)
	}
	i := p.rng.Intn(len(p.miscs))
	m := p.miscs[i]
	bitmap, err := m.MarkCores(uint32(p.rng.Intn(3)+1), 0, uint32(p.cores-1))
	if err == nil && p.rng.Intn(2) == 0 {
		m.UnmarkCores(bitmap)
	}
	if p.rng.Intn(4) == 0 {
		m.Close() // the flush frees the rest
		p.miscs = append(p.miscs[:i], p.miscs[i+1:]...)
	}
}

func (p *stormProc) datastore(d *stormDev) {
	switch {
	case d.ds != nil && p.rng.Intn(2) == 0:
		unix.Munmap(d.ds)
		d.ds = nil
		d.d.ReleaseDatastore()
	case d.ds != nil:
		d.ds[p.rng.Intn(len(d.ds))] = 1
	default:
		ds, err := d.d.AcquireDatastore(0)
		if err != nil {
			return
		}
		if p.rng.Intn(4) == 0 {
			d.d.ReleaseDatastore()
			return
		}
		if m, err := d.d.MapDatastore(ds); err == nil && len(m) > 0 {
			d.ds = m
			m[p.rng.Intn(len(m))] = 1
		}
	}
}

// badPointers sends well-formed structs whose inner user pointers are
// garbage, and now and then a garbage top-level pointer.
func (p *stormProc) badPointers(d *stormDev) {
	fd := d.d.Fd()
	var handle uint64
	if m := p.mem(d); m != nil {
		handle = m.m.Handle
	}
	switch p.rng.Intn(8) {
	case 0:
		v := ioctl.MemBufCopy64{MemHandle: handle, Buffer: p.badPtr(), Size: uint64(p.rng.Intn(8192) + 1), CopyToMemHandle: uint32(p.rng.Intn(2))}
		testutil.Ioctl(fd, ioctl.CmdMemBufCopy64, &v)
	case 1:
		// The chunk is made, then its handle cannot be written back.
		v := ioctl.MemAllocV2MemType64{Size: 4096, HostMemory: uint32(p.rng.Intn(2)), NCID: p.core(), MemType: ioctl.MemTypeUnknownDevice, MemHandle: p.badPtr()}
		testutil.Ioctl(fd, ioctl.CmdMemAllocV2MT64, &v)
	case 2:
		v := ioctl.BARRW{Address: p.badPtr(), Data: p.badPtr(), Count: uint32(p.rng.Intn(4) + 1)}
		testutil.Ioctl(fd, []uint32{ioctl.CmdBARRead, ioctl.CmdBARWrite}[p.rng.Intn(2)], &v)
	case 3:
		v := ioctl.ReadHWCounters{Address: p.badPtr(), Data: p.badPtr(), Count: uint32(p.rng.Intn(4) + 1)}
		testutil.Ioctl(fd, ioctl.CmdReadHWCounters, &v)
	case 4:
		v := ioctl.DMAQueueGetState{EngID: uint32(p.rng.Intn(p.engs * p.cores)), QID: uint32(p.rng.Intn(16)), TX: p.badPtr(), RX: p.badPtr()}
		testutil.Ioctl(fd, ioctl.CmdDMAQueueGetState, &v)
	case 5:
		v := ioctl.DMACopyDescriptors64{MemHandle: handle, Buffer: p.badPtr(), NumDescs: uint32(p.rng.Intn(4) + 1)}
		testutil.Ioctl(fd, ioctl.CmdDMACopyDescriptors64, &v)
	case 6:
		v := ioctl.PostMetric{Data: p.badPtr(), DataSize: uint32(p.rng.Intn(128) + 1)}
		testutil.Ioctl(fd, ioctl.CmdPostMetric, &v)
	default:
		cmd := []uint32{ioctl.CmdSemaphoreIncrement, ioctl.CmdMemAllocV2MT64, ioctl.CmdNCReset, ioctl.CmdCRWLWriterEnter, ioctl.CmdAcquireNeuronDS}[p.rng.Intn(5)]
		testutil.IoctlAddr(fd, cmd, uintptr(p.badPtr()))
	}
}

// stressDMA copies between two fresh chunks on a queue of the process's
// own (engine below engines), sometimes leaving the queue and chunks to
// its exit.
func stressDMA(rng *rand.Rand, d *runtime.Device, engines int) {
	src, err := d.Alloc(256<<10, runtime.AllocOptions{Host: rng.Intn(2) == 0})
	if err != nil {
		return
	}
	dst, err := d.Alloc(256<<10, runtime.AllocOptions{Host: rng.Intn(2) == 0})
	if err != nil {
		src.Free()
		return
	}
	marker, err := d.NewMarker()
	if err != nil {
		return
	}
	eng := uint32(rng.Intn(engines))
	q, err := d.InitQueue(eng, uint32(rng.Intn(16)), 64, runtime.AllocOptions{Host: true})
	if err == nil && q.Submit([]runtime.Copy{{Src: src.PA, Dst: dst.PA, Len: 0}, {Src: src.PA + 1<<16, Dst: dst.PA + 1<<16, Len: 4096}, marker.Copy()}) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		marker.Wait(ctx) // a reset may stop the queue: then the wait times out
		cancel()
	}
	if rng.Intn(2) == 0 {
		marker.Close()
		src.Free()
		dst.Free()
	}
}
