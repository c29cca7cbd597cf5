package chip

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/exectrace"
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/dhal"
)

// MaxCores is the most cores a chip has (the driver's MAX_NC_PER_DEVICE).
const MaxCores = 8

// Config is what a chip is built from: its architecture, its place on
// the host and the emulation's knobs.
type Config struct {
	Name    string // neuronN, for the memory file and logs
	Arch    *dhal.ArchFacts
	Backing Backing
	Log     *logrus.Entry
	// Epoch is the zero of the notification clocks and of the sweeper's.
	Epoch time.Time
	// InferenceStart is the semaphore whose increment rings a core's
	// doorbell; -1: any.
	InferenceStart int
	// ExecLatency is how long a semantic execution takes.
	ExecLatency time.Duration
	// HangEnd is how long a run stays blocked on an actor neuronfs does not
	// emulate before it is ended with error records (hangend.go); 0 never.
	HangEnd time.Duration
	// ResetLatency is how long the firmware takes to reset.
	ResetLatency time.Duration
	// PCI is the chip's PCI function (config space, BARs, link).
	PCI PCIFunction
	// Identity are misc-RAM registers the firmware reports from the start
	// (device id, serial number, server info).
	Identity map[uint64]uint32
	// Trace, if set, records the engines' records and waits and the DMA
	// queues. copies (corelink.go, request.go).
	Trace *exectrace.Device
}

// Chip is one emulated Neuron device's silicon: its physical memory and
// the HBM scrub pattern, the DMA address space and engines, BAR0 with the
// firmware behind it, the TOP_SPs' notification blocks, the exec-request
// watch over the DMA queues, the power model, and its cores (Core), each
// with what is its own.
type Chip struct {
	cfg  Config
	arch *dhal.ArchFacts
	log  *logrus.Entry
	drv  Driver

	phys    *physMem
	pattern *hbmPattern
	mem     *dma.Space
	engines []*dma.Engine
	bar     *mmio.BAR
	fw      *mmio.Firmware
	topSPNQ []*nq.Block // NOTIFIC blocks of the TOP_SPs

	cores    []*Core        // one per NeuronCore (core.go)
	sweeps   []*sweepTarget // semaphore areas the sweeper polls (semsweep.go)
	requests *requestWatch  // delivered exec requests (request.go)
	roles    *queueRoles    // the queues the device's tail increments feed (tailinc.go)
	starved  atomic.Int32   // the engines' queues waiting for staged descriptors (Restage)
	power    firmwarePower  // the firmware's utilisation model (power.go)
	pool     *enginePool    // the goroutines engines take turns on (enginepool.go)
}

// New builds a chip over a fresh physical memory file. drv is asked
// nothing until an engine, a doorbell or the firmware runs.
func New(cfg Config, drv Driver) (*Chip, error) {
	c := &Chip{cfg: cfg, arch: cfg.Arch, log: cfg.Log, drv: drv, pool: newEnginePool()}
	phys, err := newPhysMem(cfg.Name, cfg.Arch.PhysicalSpan(), cfg.Backing)
	if err != nil {
		return nil, err
	}
	c.phys = phys
	c.roles = newQueueRoles(cfg.Arch.DMAEnginesPerDevice)
	c.pattern = newHBMPattern(phys.fd)
	c.initSpace()
	c.initCores()
	c.initRoutes()
	c.initSweeps()
	c.requests = newRequestWatch(c.Mem, c.arch.DMAEnginesPerDevice, c.cores)
	c.initEngines()
	if err := c.initBAR0(); err != nil {
		c.Close()
		return nil, fmt.Errorf("BAR0: %w", err)
	}
	return c, nil
}

// initCores builds the cores, each handed its view of the chip.
func (c *Chip) initCores() {
	cfg := coreConfig{arch: c.arch, log: c.log, inferenceStart: c.cfg.InferenceStart, execLatency: c.cfg.ExecLatency, epoch: c.cfg.Epoch, hangEnd: c.cfg.HangEnd}
	for nc := range min(c.arch.CoresPerDevice, MaxCores) {
		c.cores = append(c.cores, newCore(nc, coreLink{c}, cfg))
	}
}

// Core returns core nc, or nil for a core the chip does not have.
func (c *Chip) Core(nc int) *Core {
	if nc < 0 || nc >= len(c.cores) {
		return nil
	}
	return c.cores[nc]
}

// Stop halts every engine and every sequencer and waits (briefly) for
// them. The memory stays mapped: a neighbour's engine may still reach it
// until every chip of the host stopped.
func (c *Chip) Stop() {
	c.stopEngines()
	for _, core := range c.cores {
		core.cancelRuns()
	}
	for _, core := range c.cores {
		core.stopAll()
	}
}

// Close unmaps and closes the physical memory; nothing may use the chip
// after.
func (c *Chip) Close() {
	if c.mem != nil {
		c.mem.Close()
	}
	c.phys.close()
}

// PhysFd returns the file (a memfd, or a file of the backing directory)
// holding the chip's physical address space; device files pass mmap
// through to it.
func (c *Chip) PhysFd() int { return c.phys.fd }

// PhysView returns [pa, pa+size) of the physical memory as the daemon
// sees it, for tests and self-tests.
func (c *Chip) PhysView(pa, size uint64) ([]byte, error) {
	v, ok := c.mem.Local(pa, size)
	if !ok {
		return nil, fmt.Errorf("physical range %#x+%#x outside the device's memory", pa, size)
	}
	return v, nil
}

// PhysicalResident reports how much of the physical memory the host
// backs right now (HBM and host chunks that were touched).
func (c *Chip) PhysicalResident() (uint64, error) { return c.phys.resident() }

// Punch returns [pa, pa+size) to the host; it reads back as zeros.
func (c *Chip) Punch(pa, size uint64) { c.phys.punch(pa, size) }

// Reserve makes the backing hold [pa, pa+n).
func (c *Chip) Reserve(pa, n uint64) error { return c.phys.reserve(pa, n) }

// Fill gives [pa, pa+n) the pattern of a pending scrub, before anything
// reaches it.
func (c *Chip) Fill(pa, n uint64) { c.pattern.fill(pa, n) }

// Scrub makes HBM channel ch's range [base, base+size) read as value
// (0: zeros) from now on.
func (c *Chip) Scrub(ch int, base, size uint64, value uint32) {
	c.phys.punch(base, size)
	c.pattern.scrub(ch, base, size, value)
}

// Mem is the chip's DMA address space.
func (c *Chip) Mem() *dma.Space { return c.mem }

// Engines is the number of DMA engines.
func (c *Chip) Engines() int { return len(c.engines) }

// Engine returns DMA engine id, or nil past the chip's engines.
func (c *Chip) Engine(id int) *dma.Engine {
	if id < 0 || id >= len(c.engines) {
		return nil
	}
	return c.engines[id]
}

// BAR0 is the chip's register file.
func (c *Chip) BAR0() *mmio.BAR { return c.bar }

// Firmware is the emulated firmware behind misc RAM.
func (c *Chip) Firmware() *mmio.Firmware { return c.fw }

// FirmwareState reports what the firmware was told (posted metrics,
// power profile, request counts).
func (c *Chip) FirmwareState() mmio.FirmwareState { return c.fw.State() }
