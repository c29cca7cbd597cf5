// Package mempool is the emulated device's memory allocator, modelled on
// the Neuron driver's mempool (aws-neuronx-dkms 2.25.4.0, neuron_mempool.c,
// neuron_mc_handle.c): per-HBM-channel main and small gen_pools with the
// 16 MiB carve-out, the contiguous scratchpad, a host-memory pool, memory
// handles, chunk lifespans, reference counts, the sysfs memory counters and
// per-process usage. It is pure data: it hands out addresses and the caller
// backs them with memory.
//
// Device chunk addresses are the real device physical addresses. Host
// memory, which the driver gets from dma_alloc_coherent, comes from an
// emulated host-physical range [HostRangeStart, HostRangeEnd); a host
// chunk's PA is that address OR'ed with the architecture's host base.
package mempool

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Allocator constants of the driver (module-parameter defaults included).
const (
	Granule       = 1 << granuleShift // allocation granule and size rounding (PAGE_SIZE)
	CarveoutSize  = 0x1000000         // 16 MiB reserved at the start of every channel at probe
	SmallPoolSize = 1 << 30           // mempool_small_pool_size: small pool at the top of each channel
	SmallAllocMax = 512 << 10         // mempool_small_alloc_max: sizes up to this try the small pool first
	MaxNC         = 8                 // MAX_NC_PER_DEVICE: nc_id must be below this
	ChunkMagic    = 0xE1C2D3F4        // MEMCHUNK_MAGIC of a live chunk
	DevmemVABit   = uint64(1) << 63   // set in the genpool address of device memory (GENPOOL_DEVMEM_BASE)

	// Emulated host-physical range for host memory (page granule).
	HostRangeStart = 0x100000
	HostRangeEnd   = 0x100000000

	deadMagic = 0xDEAD
)

// Lifespan says when a chunk is freed automatically (enum mc_lifespan).
type Lifespan int

const (
	LifespanLocal       Lifespan = 1 // freed by the code that allocated it before the syscall returns
	LifespanCurProcess  Lifespan = 2 // freed on the allocating process's last flush
	LifespanAllProcess  Lifespan = 3 // freed when the last fd of the device is released
	LifespanDevice      Lifespan = 4 // lives as long as the device
	lifespanAfterDevice Lifespan = 5
)

// Location is where a chunk's memory lives (enum mem_location).
type Location int

const (
	LocHost   Location = 1
	LocDevice Location = 2
)

// Memory types (mem_alloc_category_t), defined with the ABI. They only
// select the sysfs counter, except MemTypeContiguousScratchpadDevice,
// which changes device placement.
const (
	MemTypeUnknownHost                = ioctl.MemTypeUnknownHost
	MemTypeCodeHost                   = ioctl.MemTypeCodeHost
	MemTypeTensorsHost                = ioctl.MemTypeTensorsHost
	MemTypeConstantsHost              = ioctl.MemTypeConstantsHost
	MemTypeMiscHost                   = ioctl.MemTypeMiscHost
	MemTypeNcdevHost                  = ioctl.MemTypeNcdevHost
	MemTypeNotificationHost           = ioctl.MemTypeNotificationHost
	MemTypeUnknownDevice              = ioctl.MemTypeUnknownDevice
	MemTypeCodeDevice                 = ioctl.MemTypeCodeDevice
	MemTypeTensorsDevice              = ioctl.MemTypeTensorsDevice
	MemTypeConstantsDevice            = ioctl.MemTypeConstantsDevice
	MemTypeScratchpadDevice           = ioctl.MemTypeScratchpadDevice
	MemTypeMiscDevice                 = ioctl.MemTypeMiscDevice
	MemTypeNcdevDevice                = ioctl.MemTypeNcdevDevice
	MemTypeCollectivesDevice          = ioctl.MemTypeCollectivesDevice
	MemTypeScratchpadNonsharedDevice  = ioctl.MemTypeScratchpadNonsharedDevice
	MemTypeNotificationDevice         = ioctl.MemTypeNotificationDevice
	MemTypeDMARingsHost               = ioctl.MemTypeDMARingsHost
	MemTypeDMARingsDevice             = ioctl.MemTypeDMARingsDevice
	MemTypeContiguousScratchpadDevice = ioctl.MemTypeContiguousScratchpadDevice
	MemTypeMax                        = ioctl.MemTypeMax
)

// Chunk is one allocation. The exported fields never change after Alloc;
// read them freely. Everything else belongs to the Pool.
type Chunk struct {
	PA       uint64 // device physical address, or HostBase | host address
	VA       uint64 // device: the genpool address, PA | DevmemVABit; host: 0
	Size     uint64 // bytes, a multiple of Granule
	Loc      Location
	Channel  int    // dram_channel as requested (validated also for host memory)
	NCID     int    // core the memory is accounted to
	MemType  uint32 // as requested, possibly out of range
	Lifespan Lifespan
	PID      int32 // allocating process (tgid); 0 for the driver itself

	magic   uint32
	refs    int
	pins    int            // accesses in progress (Pin); the range stays reserved while any
	retired bool           // freed while pinned: the last Unpin hands the range back
	shared  map[int32]bool // processes handed the handle by another (strict mode)
	handle  uint64
	mainEnd uint64      // end of the main pool of a device chunk's channel
	from    *genpool    // pool the device memory came from (nil for host memory)
	list    lifespanKey // lifespan list the chunk is on
	seq     uint64      // position on that list (newest highest)
}

// IsScratchpad reports whether c is a contiguous-scratchpad device chunk.
func (c *Chunk) IsScratchpad() bool {
	return c.Loc == LocDevice && c.MemType == MemTypeContiguousScratchpadDevice
}

// MainPoolEnd is the end address of the main pool of a device chunk's
// channel (where the contiguous scratchpad ends); 0 for host chunks.
func (c *Chunk) MainPoolEnd() uint64 { return c.mainEnd }

// InBounds is the driver's access check for [off, off+n) of the chunk
// (mc_access_is_within_bounds): scratchpad chunks may be accessed up to the
// end of the main pool, others up to their size. Like the driver it does
// not guard against overflow of off+n.
func (c *Chunk) InBounds(off, n uint64) bool {
	if c.IsScratchpad() {
		return c.PA+off+n <= c.mainEnd
	}
	return off+n <= c.Size
}

// AllocRequest is one mc_alloc_align call.
type AllocRequest struct {
	Size  uint64
	Align uint64 // device: > Granule selects aligned first fit; host: must be 0
	Host  bool
	// Channel is the HBM channel; it must be valid even for host memory.
	// The driver's dram_region is ignored (it forces region 0).
	Channel  uint32
	NCID     uint32
	MemType  uint32
	Lifespan Lifespan
	PID      int32 // calling process (tgid); 0 when the driver allocates for itself
}

type lifespanKey struct {
	l   Lifespan
	pid int32 // only for LifespanCurProcess
}

func keyFor(l Lifespan, pid int32) lifespanKey {
	if l != LifespanCurProcess {
		pid = 0
	}
	return lifespanKey{l, pid}
}

type channel struct {
	base        uint64
	main, small *genpool // small is nil when disabled
	mainSize    uint64
	smallSize   uint64
	scratch     uint64   // scratchpad_size: bytes of contiguous scratchpad in use
	chunks      []*Chunk // device chunks of the channel by PA
}

// Pool is the allocator of one device. It is safe for concurrent use.
type Pool struct {
	mu       lockrank.Mutex[lockrank.Pool]
	hostBase uint64
	channels []*channel
	host     *HostSpace // shared by the host's devices
	owner    any        // this pool's device, as host's Owner reports it
	hostList []*Chunk   // this pool's host chunks by PA
	handles  handleTable
	lists    map[lifespanKey]map[*Chunk]struct{}
	seq      uint64
	usage    usage
	pidUse   map[int32]*[2]uint64 // [host, device] bytes per process
	fault    func() bool
	// pinnedFreed holds the chunks freed while an access pins them: their
	// memory is still in use (see Allocated).
	pinnedFreed map[*Chunk]struct{}
}

// New builds the pools of one device of the given architecture and
// allocates the 16 MiB carve-out at the start of every channel (device
// lifespan, driver memory, accounted to core = channel index). As in the
// driver, the sysfs counters are zeroed afterwards (their registration
// happens after the mempool is built), so the carve-outs never show there.
func New(f *dhal.ArchFacts) *Pool { return NewOnHost(f, NewHostSpace(), nil) }

// NewOnHost is New for a device (owner) of a host whose DMA address space
// is host.
func NewOnHost(f *dhal.ArchFacts, host *HostSpace, owner any) *Pool {
	p := &Pool{
		hostBase: f.HostBase,
		host:     host,
		owner:    owner,
		lists:    map[lifespanKey]map[*Chunk]struct{}{},
		pidUse:   map[int32]*[2]uint64{},

		pinnedFreed: map[*Chunk]struct{}{},
	}
	p.handles.init(HandleTableSize)
	for i := 0; i < f.HBMChannels; i++ {
		base, size := f.HBMBases[i], f.HBMSize
		small := uint64(SmallPoolSize)
		if small >= size {
			small = 0
		}
		ch := &channel{base: base, mainSize: size - small, smallSize: small}
		ch.main = newGenpool(base, ch.mainSize, base|DevmemVABit)
		if small > 0 {
			sb := base + ch.mainSize
			ch.small = newGenpool(sb, small, sb|DevmemVABit)
		}
		p.channels = append(p.channels, ch)
	}
	for i, ch := range p.channels {
		c, err := p.Alloc(AllocRequest{Size: CarveoutSize, Channel: uint32(i), NCID: uint32(i),
			MemType: MemTypeNcdevDevice, Lifespan: LifespanDevice})
		if err != nil || c.PA != ch.base {
			panic(fmt.Sprintf("mempool: carve-out of channel %d failed: %v", i, err))
		}
	}
	p.usage = usage{}
	return p
}

// ZeroUsage zeroes every memory counter, as registering the sysfs tree
// does once probe has made its own allocations.
func (p *Pool) ZeroUsage() {
	p.mu.Lock()
	p.usage = usage{}
	p.mu.Unlock()
}

// SetAllocFault installs a fault-injection hook consulted at the driver's
// fault point (after the size and channel checks, before the nc_id check);
// when it returns true the allocation fails with ENOMEM. nil removes it.
func (p *Pool) SetAllocFault(fn func() bool) {
	p.mu.Lock()
	p.fault = fn
	p.mu.Unlock()
}

func errno(e syscall.Errno, format string, args ...any) error {
	return fmt.Errorf("mempool: "+format+": %w", append(args, e)...)
}

// Alloc allocates a chunk with one reference, in the driver's order of
// checks: size > INT64_MAX, channel >= channel count, fault injection,
// nc_id >= 8, host with align != 0, device align > INT_MAX (EINVAL), then
// no space (ENOMEM).
func (p *Pool) Alloc(r AllocRequest) (*Chunk, error) {
	if r.Size > math.MaxInt64 {
		return nil, errno(syscall.EINVAL, "size %#x too large", r.Size)
	}
	size := (r.Size + Granule - 1) &^ (Granule - 1)
	if int(r.Channel) >= len(p.channels) {
		return nil, errno(syscall.EINVAL, "dram channel %d out of range", r.Channel)
	}
	if r.Lifespan < LifespanLocal || r.Lifespan > LifespanDevice {
		return nil, errno(syscall.EINVAL, "invalid lifespan %d", r.Lifespan)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fault != nil && p.fault() {
		return nil, errno(syscall.ENOMEM, "injected allocation failure")
	}
	if r.NCID >= MaxNC {
		return nil, errno(syscall.EINVAL, "nc_id %d out of range", r.NCID)
	}
	c := &Chunk{Size: size, Channel: int(r.Channel), NCID: int(r.NCID), MemType: r.MemType,
		Lifespan: r.Lifespan, PID: r.PID}
	if r.Host {
		if r.Align != 0 {
			return nil, errno(syscall.EINVAL, "aligned host memory is not supported")
		}
		addr, ok := p.host.alloc(size, p.owner)
		if !ok {
			return nil, errno(syscall.ENOMEM, "no host memory for %#x bytes", size)
		}
		c.Loc, c.PA = LocHost, p.hostBase|addr
	} else {
		if err := p.allocDevice(c, r.Align); err != nil {
			return nil, err
		}
	}
	p.insert(c)
	return c, nil
}

func (p *Pool) allocDevice(c *Chunk, align uint64) error {
	ch := p.channels[c.Channel]
	pool, alt := ch.main, ch.small
	if ch.small != nil && c.Size <= SmallAllocMax {
		pool, alt = ch.small, ch.main
	}
	var pa uint64
	var ok bool
	switch {
	case c.MemType == MemTypeContiguousScratchpadDevice:
		// Fixed offset in the main pool, just below the scratchpad already
		// in use; the subtraction wraps like the driver's u64 arithmetic.
		pool = ch.main
		off := ch.mainSize - ch.scratch - c.Size
		if pa, ok = pool.allocFixed(off, c.Size); !ok {
			return errno(syscall.ENOMEM, "channel %d: contiguous scratchpad range %#x+%#x is busy",
				c.Channel, ch.base+off, c.Size)
		}
		ch.scratch += c.Size
	case align > Granule:
		if align > math.MaxInt32 {
			return errno(syscall.EINVAL, "alignment %#x not supported", align)
		}
		if pa, ok = pool.allocAlign(c.Size, align); !ok && alt != nil {
			pool = alt
			pa, ok = pool.allocAlign(c.Size, align)
		}
		if ok && pa&(align-1) != 0 {
			// Only possible for alignments that are not powers of two.
			pool.free(pa, c.Size)
			ok = false
		}
	default:
		if pa, ok = pool.alloc(c.Size); !ok && alt != nil {
			pool = alt
			pa, ok = pool.alloc(c.Size)
		}
	}
	if !ok {
		return errno(syscall.ENOMEM, "channel %d: no device memory for %#x bytes (align %#x)",
			c.Channel, c.Size, align)
	}
	c.Loc, c.PA, c.VA, c.from = LocDevice, pa, pa|DevmemVABit, pool
	c.mainEnd = ch.base + ch.mainSize
	return nil
}

// insert finishes a successful allocation: chunk state, lifespan list,
// address index and accounting.
func (p *Pool) insert(c *Chunk) {
	c.magic = ChunkMagic
	c.refs = 1
	p.addToList(c, keyFor(c.Lifespan, c.PID))
	idx := p.index(c)
	i := sort.Search(len(*idx), func(i int) bool { return (*idx)[i].PA > c.PA })
	*idx = slices.Insert(*idx, i, c)
	p.usage.account(c, true)
	if c.PID != 0 {
		u := p.pidUse[c.PID]
		if u == nil {
			u = new([2]uint64)
			p.pidUse[c.PID] = u
		}
		u[c.Loc-1] += c.Size
	}
}

func (p *Pool) index(c *Chunk) *[]*Chunk {
	if c.Loc == LocHost {
		return &p.hostList
	}
	return &p.channels[c.Channel].chunks
}

func (p *Pool) addToList(c *Chunk, k lifespanKey) {
	m := p.lists[k]
	if m == nil {
		m = map[*Chunk]struct{}{}
		p.lists[k] = m
	}
	p.seq++
	c.list, c.seq = k, p.seq
	m[c] = struct{}{}
}

func (p *Pool) removeFromList(c *Chunk) {
	m := p.lists[c.list]
	delete(m, c)
	if len(m) == 0 {
		delete(p.lists, c.list)
	}
}

// IncRef takes one more reference on c (mc_inc_refcount). The driver
// defines it but never calls it, so every chunk it hands out has exactly
// one reference.
func (p *Pool) IncRef(c *Chunk) {
	p.mu.Lock()
	if c.magic == ChunkMagic {
		c.refs++
	}
	p.mu.Unlock()
}

// Free drops one reference (mc_free); at zero the chunk and its handle are
// released and the sysfs and per-process usage drop. caller is the process
// doing the free (tgid, 0 for none): the driver charges the freed bytes to
// the caller's usage, not the owner's. Freeing a released chunk does
// nothing.
//
// The address range is not reusable yet: when Free reports discard, the
// caller returns the range's memory to the host and then calls Reclaim.
// A chunk that is pinned (an access in progress) reports false here, and
// its last Unpin reports discard instead, so no access ever runs on memory
// that was handed to someone else.
func (p *Pool) Free(c *Chunk, caller int32) (discard bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.magic != ChunkMagic {
		return false
	}
	c.refs--
	if c.refs > 0 {
		return false
	}
	return p.retire(c, caller)
}

// retire releases c's handle, indexes and accounting, and reports whether
// the range is ready to discard (nobody has it pinned).
func (p *Pool) retire(c *Chunk, caller int32) bool {
	if c.handle != 0 {
		_ = p.handles.release(c.handle) // fails only when the table is down
		c.handle = 0
	}
	idx := p.index(c)
	if i := sort.Search(len(*idx), func(i int) bool { return (*idx)[i].PA >= c.PA }); i < len(*idx) && (*idx)[i] == c {
		*idx = slices.Delete(*idx, i, i+1)
	}
	p.usage.account(c, false)
	if u := p.pidUse[caller]; caller != 0 && u != nil {
		if u[c.Loc-1] > c.Size {
			u[c.Loc-1] -= c.Size
		} else {
			u[c.Loc-1] = 0
		}
		if u[0] == 0 && u[1] == 0 {
			delete(p.pidUse, caller)
		}
	}
	p.removeFromList(c)
	c.magic = deadMagic
	c.retired = true
	if c.pins > 0 {
		p.pinnedFreed[c] = struct{}{}
	}
	return c.pins == 0
}

// Reclaim hands a discarded chunk's address range back to the allocator.
// Call it once, after Free, FreeExpired or Unpin reported the chunk for
// discard and its memory was returned to the host.
func (p *Pool) Reclaim(c *Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !c.retired || c.pins != 0 {
		return
	}
	c.retired = false
	if c.Loc == LocHost {
		p.host.free(c.PA&^p.hostBase, c.Size)
	} else {
		c.from.free(c.PA, c.Size)
	}
	if c.IsScratchpad() {
		// The driver only logs when this is not the lowest scratchpad chunk.
		p.channels[c.Channel].scratch -= c.Size
	}
}

// Pin marks an access to c's memory in progress; it fails for a chunk
// that is no longer live. Every successful Pin needs one Unpin.
func (p *Pool) Pin(c *Chunk) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.magic != ChunkMagic {
		return false
	}
	c.pins++
	return true
}

// Unpin ends an access. It reports discard when the chunk was freed
// during the access and this was the last one: the caller then returns
// the memory and calls Reclaim, as after Free.
func (p *Pool) Unpin(c *Chunk) (discard bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.pins--
	discard = c.pins == 0 && c.retired && c.magic != ChunkMagic
	if discard {
		delete(p.pinnedFreed, c)
	}
	return discard
}

// FreeExpired is mpset_free_expired_mc: it drops one reference of every
// chunk on the lifespan list l (for LifespanCurProcess, the list of
// process pid), newest first. Chunks that still have references move to
// the next lifespan's list; on the device list they are freed regardless.
// pid is also the caller charged for the frees (0 for none). It returns
// the chunks ready to discard (see Free).
func (p *Pool) FreeExpired(l Lifespan, pid int32) []*Chunk {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.lists[keyFor(l, pid)]
	todo := make([]*Chunk, 0, len(m))
	for c := range m {
		todo = append(todo, c)
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].seq > todo[j].seq })
	var freed []*Chunk
	for _, c := range todo {
		c.refs--
		if c.refs > 0 {
			if next := l + 1; next < lifespanAfterDevice {
				p.removeFromList(c)
				p.addToList(c, keyFor(next, pid))
				continue
			}
			c.refs = 0
		}
		if p.retire(c, pid) {
			freed = append(freed, c)
		}
	}
	return freed
}

// Handle returns c's memory handle, assigning one on first use. It fails
// with ENOENT when the handle table is exhausted (which, as in the driver,
// disables the table) and EINVAL for a released chunk.
func (p *Pool) Handle(c *Chunk) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.magic != ChunkMagic {
		return 0, errno(syscall.EINVAL, "chunk %#x is not live", c.PA)
	}
	if c.handle == 0 {
		h, err := p.handles.alloc(c)
		if err != nil {
			return 0, err
		}
		c.handle = h
	}
	return c.handle, nil
}

// Lookup returns the chunk of handle h, or an EINVAL error for 0, indices
// beyond the table, unused or released slots, and dead chunks.
func (p *Pool) Lookup(h uint64) (*Chunk, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.handles.find(h)
	if c == nil || c.magic != ChunkMagic {
		return nil, errno(syscall.EINVAL, "invalid memory handle %#x", h)
	}
	return c, nil
}

// Containing returns the live chunk (of any process, host or device) whose
// range holds pa (mpset_search_mc).
func (p *Pool) Containing(pa uint64) (*Chunk, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := containing(p.hostList, pa); c != nil {
		return c, true
	}
	for _, ch := range p.channels {
		if c := containing(ch.chunks, pa); c != nil {
			return c, true
		}
	}
	return nil, false
}

func containing(list []*Chunk, pa uint64) *Chunk {
	i := sort.Search(len(list), func(i int) bool { return list[i].PA > pa })
	if i > 0 && pa-list[i-1].PA < list[i-1].Size {
		return list[i-1]
	}
	return nil
}

// DeviceChunks lists the live device chunks of an HBM channel in address
// order (DUMP_MEM_CHUNKS); nil for a channel that does not exist.
func (p *Pool) DeviceChunks(channel int) []*Chunk {
	p.mu.Lock()
	defer p.mu.Unlock()
	if channel < 0 || channel >= len(p.channels) {
		return nil
	}
	return slices.Clone(p.channels[channel].chunks)
}

// Usage returns a copy of the memory counters.
func (p *Pool) Usage() UsageSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return UsageSnapshot(p.usage)
}

// ResetCounter zeroes one value of one counter, as writing anything to its
// sysfs file does; nc is the core, or -1 for the device-wide slot. Invalid
// arguments are ignored.
func (p *Pool) ResetCounter(nc int, c Counter, f Field) {
	if nc < -1 || nc >= MaxNC || c < 0 || c >= NumCounters {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.usage.stat(nc, c)
	switch f {
	case FieldTotal:
		s.Total = 0
	case FieldPresent:
		s.Present = 0
	case FieldPeak:
		s.Peak = 0
	}
}

// PIDUsage returns the host and device bytes charged to process pid: what
// it allocated minus what it freed (never below zero).
func (p *Pool) PIDUsage(pid int32) (host, device uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u := p.pidUse[pid]; u != nil {
		return u[0], u[1]
	}
	return 0, 0
}

// Share records that process pid was handed c's handle by another
// process (MEM_MC_GET_INFO_V2); strict mode lets it use the chunk then.
func (p *Pool) Share(c *Chunk, pid int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.magic != ChunkMagic {
		return
	}
	if c.shared == nil {
		c.shared = map[int32]bool{}
	}
	c.shared[pid] = true
}

// SharedWith reports whether pid was handed c's handle.
func (p *Pool) SharedWith(c *Chunk, pid int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.shared[pid]
}
