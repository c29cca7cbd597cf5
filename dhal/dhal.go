// Package dhal holds the per-architecture facts of the emulated Neuron
// devices (driver aws-neuronx-dkms 2.25.4.0) and the EC2 instance profiles
// the emulator can pretend to be.
//
// Everything here is immutable data. Functions that hand out slices or
// structs return fresh copies, so callers may modify what they get.
package dhal

import (
	"fmt"
	"time"
)

// Arch is the driver's architecture enum (DEVICE_BASIC_INFO.architecture).
type Arch uint32

// Architectures supported by driver 2.25.4.0. Inf1 (v1) support was removed.
const (
	V2 Arch = 2 // Trn1, Inf2
	V3 Arch = 3 // Trn2
	V4 Arch = 4 // Trn3
)

func (a Arch) String() string {
	switch a {
	case V2:
		return "v2"
	case V3:
		return "v3"
	case V4:
		return "v4"
	}
	return fmt.Sprintf("Arch(%d)", uint32(a))
}

// Platform is the driver's platform type; values equal the driver enum.
type Platform int

const (
	PlatformStandard    Platform = iota // single 16-device box (or smaller)
	PlatformUltraServer                 // pod of up to 4 nodes, pod election runs
	PlatformPDS                         // switched pod; pod data are spoofed
)

func (p Platform) String() string {
	switch p {
	case PlatformStandard:
		return "standard"
	case PlatformUltraServer:
		return "ultraserver"
	case PlatformPDS:
		return "pds"
	}
	return fmt.Sprintf("Platform(%d)", int(p))
}

// Limits shared by all architectures.
const (
	MaxDevices        = 64  // neuron_devices[] size; routing ids must be below this
	MaxDevicesPDS     = 128 // routing-id limit on PDS platforms
	MaxCoresPerDevice = 8   // per-device arrays in the driver are sized for 8 cores
	MaxTopSPs         = 16
	RIDMapEntries     = 64 // entries of HOST_DEVICE_ID_TO_RID_MAP's array (260-byte struct)
	NCMapEntries      = 128
)

// Layout of one core's TPB window in BAR0 (identical on every arch).
const (
	TPBWindowSize      = 0x4000000 // stride between cores' windows
	TPBSBUFSize        = 0x2000000 // state buffer at the start of the window
	TPBEventsOffset    = 0x2700000 // 256 x u32 events
	TPBSemReadOffset   = 0x2701000 // 256 x u32, read current value
	TPBSemSetOffset    = 0x2701400 // write sets
	TPBSemIncOffset    = 0x2701800 // write adds
	TPBSemDecOffset    = 0x2701c00 // write subtracts
	TPBSemaphoreArea   = 0x2000    // events+semaphores, the SEMAPHORE mmap size
	TopSPWindowSize    = 0x400000
	NQSlotStride       = 0x28 // notification-queue register slot inside a block
	NQSlotBaseLoOffset = 0x100
	NQSlotBaseHiOffset = 0x104
	NQSlotSizeOffset   = 0x108
	NQSlotHeadOffset   = 0x10c
	NQSlotTailOffset   = 0x110 // where the chip writes next; read-only
	// Registers of a NOTIFIC block outside its slots.
	NotificTimestampLo  = 0x00 // free-running picosecond clock
	NotificTimestampHi  = 0x04
	NotificEnable       = 0x14 // one enable bit per slot
	NotificTimestampInc = 0xcc
)

// InvalidOffset is returned by the offset helpers for an out-of-range index.
// Callers are expected to validate indices against the counts first.
const InvalidOffset = ^uint64(0)

// ArchFacts is everything the emulator needs that depends only on the
// architecture. Obtain it with Facts; each call returns a private copy.
type ArchFacts struct {
	Arch                  Arch
	CoresPerDevice        int    // nc_per_device
	ActiveCoreMap         uint32 // default dev_nc_map
	DiesPerDevice         int    // power sampling dies
	TopSPsPerDevice       int
	SemaphoresPerCore     int
	EventsPerCore         int
	DMAEnginesPerCore     int
	DMAEnginesPerDevice   int // hardware engines, including the h2t ones
	DMAEngineSlots        int // driver array size; eng_id checks use this on every arch
	DMAEnginesResetOnExit int // dma_eng_per_nd: engines whose queues are reset when a process exits
	QueuesPerEngine       int
	HBMChannels           int
	HBMBases              []uint64 // device physical address of each channel
	HBMSize               uint64   // active bytes per channel
	BAR4ChannelStride     uint64   // BAR4 offset of channel k is k*stride (V2: channel 1 at 0x400000000)
	HostBase              uint64   // pci_host_base: OR'ed into host physical addresses
	// HostRouteMask selects the PCIe-route bits of an address; an address
	// is a host address when those bits equal HostBase (V2 looks at five
	// bits, V3/V4 at bit 46 alone).
	HostRouteMask uint64
	// RingIDErrorsMasked: V3/V4 mask the UDMA ring-id mismatch error at
	// engine init, so a descriptor with a stale ring id is executed anyway.
	RingIDErrorsMasked bool
	MiscRAMBar0        uint64 // FW-IO misc RAM offset inside BAR0
	MiscRAMDevice      uint64 // the same block as a device address
	// BAR0Size is not read by the driver; it is the smallest power of two
	// covering every register block the driver touches (V2: the APB block at
	// 0x30000000 ends below 1 GiB; V3/V4: the TOP_SP windows end at 0xf4800000).
	BAR0Size             uint64
	NQTypes              int // notification-queue types present in hardware
	NQQueuesPerType      int
	ResetInitiateMaxWait time.Duration
	// PodLinkEngines are the DMA engines pod election uses to reach the
	// left ([0]) and right ([1]) neighbour node; zero on V2 (no pods).
	PodLinkEngines [2][2]int
	// SBUFPartitionBytes is the memory at the start of each 256 KiB
	// partition of a core's state buffer (STATE_BUF_PARTITION_ACTIVE_SIZE).
	SBUFPartitionBytes uint32

	tpbBase   uint64   // BAR0 offset of core 0's TPB window; cores follow at TPBWindowSize
	nxEngines []int    // engine%16 values whose queue NXQueue belongs to the NX and survives process exit
	udmaBase  []uint64 // per hardware DMA engine: its UDMA register block in BAR0
	// programRegions are the device address ranges PROGRAM_ENGINE may
	// write (the driver's whitelist).
	programRegions []Range
	h2tEngine      []int    // per core
	h2tQueue       []int    // per core
	coreNQ         []uint64 // per core NOTIFIC block in BAR0
	topSPNQ        []uint64 // per TOP_SP NOTIFIC block in BAR0
	topSPWindow    []uint64 // per TOP_SP 4 MiB window in BAR0
	mmapTable      []MmapResource
	tpbSoC         []uint64 // per core: SoC address of its TPB window (route.go)
	peerRoutes     []uint64 // per link: route bits of its neighbour window (route.go)
	peerRouteMask  uint64
}

// archBuilders map an arch to the function building its facts; each call
// builds fresh slices, so nothing handed out is shared.
var archBuilders = map[Arch]func() ArchFacts{
	V2: v2Facts,
	V3: v3Facts,
	V4: v4Facts,
}

// Facts returns a private copy of the facts of architecture a.
func Facts(a Arch) (*ArchFacts, error) {
	build, ok := archBuilders[a]
	if !ok {
		return nil, fmt.Errorf("dhal: unsupported architecture %d", uint32(a))
	}
	f := build()
	return &f, nil
}

func pick[T any](tbl []T, i int, bad T) T {
	if i < 0 || i >= len(tbl) {
		return bad
	}
	return tbl[i]
}

// TPBBase returns the BAR0 offset of core's TPB window (InvalidOffset if
// core is out of range).
func (f *ArchFacts) TPBBase(core int) uint64 {
	if core < 0 || core >= f.CoresPerDevice {
		return InvalidOffset
	}
	return f.tpbBase + uint64(core)*TPBWindowSize
}

// H2TEngine returns the DMA engine the driver uses for core's host<->device
// copies (-1 if core is out of range).
func (f *ArchFacts) H2TEngine(core int) int { return pick(f.h2tEngine, core, -1) }

// H2TDefaultQueue returns core's default queue on its h2t engine (-1 if out
// of range). On V3/V4 two cores share one engine and take queues 0 and 1.
func (f *ArchFacts) H2TDefaultQueue(core int) int { return pick(f.h2tQueue, core, -1) }

// IsDefaultH2T reports whether queue q of engine eng is a core's default
// h2t queue, which the driver owns.
func (f *ArchFacts) IsDefaultH2T(eng, q int) bool {
	for c := range f.CoresPerDevice {
		if f.H2TEngine(c) == eng && f.H2TDefaultQueue(c) == q {
			return true
		}
	}
	return false
}

// Range is a span of addresses.
type Range struct{ Base, Size uint64 }

// Contains reports whether [addr, addr+n) lies inside r.
func (r Range) Contains(addr, n uint64) bool {
	return addr >= r.Base && n <= r.Size && addr-r.Base <= r.Size-n
}

// Layout of a UDMA engine's register block (identical on every arch).
const (
	UDMABlockSize     = 0x3c800
	UDMAM2SQueues     = 0x1000  // M2S (TX) queue q's registers at +q*UDMAQueueStride
	UDMAS2MQueues     = 0x21000 // S2M (RX) queue registers
	UDMAQueueStride   = 0x1000
	UDMAQueueRingLo   = 0x28 // ring base low (bits 31:6)
	UDMAQueueRingHi   = 0x2c
	UDMAQueueTailInc  = 0x38 // the doorbell
	UDMAQueueComplLo  = 0x44
	UDMAQueueComplHi  = 0x48
	udmaQueueRegsSize = 0x1000 * 16
)

// UDMABase returns the BAR0 offset of engine eng's UDMA block
// (InvalidOffset for an engine the chip lacks).
func (f *ArchFacts) UDMABase(eng int) uint64 { return pick(f.udmaBase, eng, InvalidOffset) }

// udmaBlockedQueueRegs are the queue registers BAR_WRITE refuses: ring and
// completion bases and the doorbell, which only the driver may program.
var udmaBlockedQueueRegs = []uint64{UDMAQueueRingLo, UDMAQueueRingHi, UDMAQueueComplLo, UDMAQueueComplHi, UDMAQueueTailInc}

// IsBAR0WriteBlocked reports whether BAR_WRITE refuses offset off: a
// protected register of any DMA queue, or one of the FW-IO mailbox
// registers listed in miscBlocked (offsets within misc RAM).
func (f *ArchFacts) IsBAR0WriteBlocked(off uint64, miscBlocked []uint64) bool {
	for _, m := range miscBlocked {
		if off == f.MiscRAMBar0+m {
			return true
		}
	}
	for _, base := range f.udmaBase {
		if off < base || off >= base+UDMABlockSize {
			continue
		}
		rel := off - base
		for _, q := range []uint64{UDMAM2SQueues, UDMAS2MQueues} {
			if rel < q || rel >= q+udmaQueueRegsSize {
				continue
			}
			reg := (rel - q) % UDMAQueueStride
			for _, b := range udmaBlockedQueueRegs {
				if reg == b {
					return true
				}
			}
		}
	}
	return false
}

// ProgramRegion reports whether PROGRAM_ENGINE may write [addr, addr+n).
func (f *ArchFacts) ProgramRegion(addr, n uint64) bool {
	for _, r := range f.programRegions {
		if r.Contains(addr, n) {
			return true
		}
	}
	return false
}

// ProgramRegions returns the PROGRAM_ENGINE whitelist.
func (f *ArchFacts) ProgramRegions() []Range { return append([]Range(nil), f.programRegions...) }

// NXQueue is the queue the NX owns on the engines listed in nxEngines.
const NXQueue = 14

// IsNXQueue reports whether (eng, q) belongs to the NX: the driver leaves
// such queues alone when their owner exits.
func (f *ArchFacts) IsNXQueue(eng, q int) bool {
	if q != NXQueue {
		return false
	}
	for _, e := range f.nxEngines {
		if eng%16 == e {
			return true
		}
	}
	return false
}

// IsHostAddress reports whether a DMA address routes to host memory.
func (f *ArchFacts) IsHostAddress(pa uint64) bool { return pa&f.HostRouteMask == f.HostBase }

// NotificationBlock returns the BAR0 offset of core's NOTIFIC block.
func (f *ArchFacts) NotificationBlock(core int) uint64 {
	return pick(f.coreNQ, core, InvalidOffset)
}

// TopSPNotificationBlock returns the BAR0 offset of TOP_SP ts's NOTIFIC block.
func (f *ArchFacts) TopSPNotificationBlock(ts int) uint64 {
	return pick(f.topSPNQ, ts, InvalidOffset)
}

// TopSPWindow returns the BAR0 offset of TOP_SP ts's 4 MiB window.
func (f *ArchFacts) TopSPWindow(ts int) uint64 {
	return pick(f.topSPWindow, ts, InvalidOffset)
}

// NQSlot returns the BAR0 offset of queue slot q inside NOTIFIC block base.
func NQSlot(base uint64, q int) uint64 { return base + NQSlotBaseLoOffset + uint64(q)*NQSlotStride }

// strided lists n offsets starting at base, stride apart.
func strided(base, stride uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)*stride
	}
	return out
}

// Product is one PCI chip model.
type Product struct {
	Name         string // "Trn1", "Inf2", "Trn2", "Trn3"
	Arch         Arch
	PCIVendor    uint16
	PCIDevice    uint16
	NDArchType   string // info/architecture/arch_type ("ND" + suffix)
	NCArchType   string // neuron_core<c>/info/architecture/arch_type ("NC" + suffix)
	InstanceType string // info/architecture/instance_type
	DeviceName   string // info/architecture/device_name
}

// BDF is a PCI address.
type BDF struct {
	Domain uint32
	Bus    uint32
	Slot   uint8
	Func   uint8
}

// String formats b the way lspci and sysfs do, e.g. "0000:10:1c.0".
func (b BDF) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", b.Domain, b.Bus, b.Slot, b.Func)
}

// ResetTPBMap is the map a core reset writes to the firmware: V2 sets bit
// c for core c and bits 8+3c..8+3c+2 for its TOP_SPs; V3/V4 set bits c,
// c+8 (its SDMA group) and c+16 (its TOP_SP group).
func (f *ArchFacts) ResetTPBMap(ncMap uint32) uint32 {
	var m uint32
	for c := range f.CoresPerDevice {
		if ncMap&(1<<c) == 0 {
			continue
		}
		if f.Arch == V2 {
			m |= 1<<c | 7<<(8+3*c)
		} else {
			m |= 1<<c | 1<<(c+8) | 1<<(c+16)
		}
	}
	return m
}

// Driver reset timing (before --time-scale): the initiate poll and the
// re-issue periods, and the sleeps between reads of the firmware status.
const (
	ResetInitiatePoll         = 100 * time.Millisecond
	ResetReissueDevice        = 30 * time.Second
	ResetReissueTPB           = 10 * time.Second
	ResetCompletionSleepsStep = 100 * time.Millisecond // sleeps 0, 1, 2, 3, 4 steps
	ResetCompletionReads      = 5
)
