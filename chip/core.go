package chip

import (
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// Core is one NeuronCore of the chip: its semaphore and event area, its
// exec doorbell, its NOTIFIC block, the exec request delivered to it, its
// staged runs and parked engines, its SBUF and PSUM, the sweeper's target
// for its area and the range of its DMA engines. Chip.New builds one per
// core; Chip.Core hands it out. A Core reaches the rest of the chip only
// through the coreChip it is handed.
type Core struct {
	nc   int
	chip coreChip
	cfg  coreConfig

	sem    dhal.MmapResource // the SEMAPHORE resource: the area's place
	hasSem bool

	doorbell Doorbell                    // its own lock (rank Exec)
	notific  *nq.Block                   // the core's NOTIFIC block
	request  atomic.Pointer[execRequest] // delivered, not yet taken by a doorbell (request.go)
	events   []dma.Range                 // the event window at its mmap and SoC addresses
	runs     coreRuns                    // staged runs and parked engines (run.go, sched.go)
	onchip   *coreOnChip                 // SBUF and PSUM (onchip.go)
	sweep    *sweepTarget                // the sweeper's view of the area; nil without one
	engFirst int                         // the core's DMA engines: [engFirst, engEnd)
	engEnd   int

	// What the core learned of the runtime (execqueue.go), each +1 (0:
	// not known): its exec queue (engine*16+queue), its doorbell
	// semaphore, and the semaphore whose increment rang last.
	execQueue, startSem, ringing atomic.Int32
	actors                       actorNotes               // each engine's last write nothing emulated answers (actors.go)
	ended                        atomic.Pointer[endedRun] // the last run ended waiting on nothing emulated (hangend.go)
	hangWatchers                 atomic.Uint64            // hang watchers started (armHang), for tests
}

// coreChip is all a Core reaches of its chip: the memory its engines
// fetch from and write to, its DMA engines (the exec queues), the driver's
// queues, allocations and counters, the trace and the power model.
type coreChip interface {
	mem() *dma.Space
	engine(id int) *dma.Engine
	deviceDrivenQueues(nc int) [][2]int
	allocation(pa uint64) (base, size uint64, ok bool)
	count(nc int, name string, n uint64)
	tracer(nc int, e seq.Engine) seq.Tracer
	addBusy(d time.Duration)
	queueRoles() *queueRoles
	tailIncrement(eng, qid int, d dma.Dir, n uint32) error
	enginePool() *enginePool
}

// coreConfig is what a Core is built with besides its chip.
type coreConfig struct {
	arch           *dhal.ArchFacts
	log            *logrus.Entry
	inferenceStart int           // Config.InferenceStart
	execLatency    time.Duration // Config.ExecLatency
	epoch          time.Time     // the NOTIFIC block's clock
	hangEnd        time.Duration // Config.HangEnd
}

// newCore builds core nc over chip; its engines are looked up when used.
func newCore(nc int, chip coreChip, cfg coreConfig) *Core {
	f := cfg.arch
	c := &Core{nc: nc, chip: chip, cfg: cfg}
	c.sem, c.hasSem = f.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if c.hasSem {
		c.events = append(c.events, dma.Range{Base: c.sem.Offset, Size: ReadWindow})
	}
	if soc := f.TPBSoCBase(nc); soc != dhal.InvalidOffset {
		c.events = append(c.events, dma.Range{Base: soc + dhal.TPBEventsOffset, Size: ReadWindow})
	}
	c.notific = nq.NewBlock(chip.mem(), cfg.epoch)
	c.onchip = newCoreOnChip(c)
	per := f.DMAEnginesPerCore
	c.engFirst, c.engEnd = nc*per, min((nc+1)*per, f.DMAEnginesPerDevice)
	if a, ok := c.Area(); ok {
		c.sweep = &sweepTarget{area: a, core: c}
	}
	return c
}

// Area returns the core's event and semaphore area in the device's
// memory; ok is false when its window cannot be reached.
func (c *Core) Area() (Area, bool) {
	if !c.hasSem {
		return nil, false
	}
	mem, ok := c.chip.mem().Local(c.sem.Offset, c.sem.Size)
	return Area(mem), ok
}

// Engines returns the range [first, end) of the core's DMA engines.
func (c *Core) Engines() (first, end int) { return c.engFirst, c.engEnd }

// NQSlots reports the bound slots of the core's NOTIFIC block (for the
// state control file).
func (c *Core) NQSlots() []nq.SlotState { return c.notific.Slots() }

// OnChip returns the core's SBUF and PSUM as its engines address them.
func (c *Core) OnChip() seq.OnChip { return c.onchip }

// ResetExec clears the core's execution state (core reset): doorbells not
// yet served are dropped, a halt is forgotten, the staged run is cancelled
// without waiting, so it may run under the driver's lock, and PSUM is
// cleared.
func (c *Core) ResetExec() {
	c.doorbell.Reset()
	c.forgetQueues()
	c.cancelRuns()
	c.onchip.psum.Reset(seq.PSUM)
}
