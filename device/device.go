package device

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// State is the driver's device_state, as the sysfs reset file prints it.
type State int

const (
	StateReset   State = 0 // a device reset is in progress
	StateReady   State = 1
	StateInvalid State = 2 // the last driver-internal reset failed
)

// MaxProcessesPerDevice is the size of the driver's attach table.
const MaxProcessesPerDevice = 16

// Device is one emulated /dev/neuronN: the driver's per-device state
// over its chip.
type Device struct {
	Index int
	sys   *System
	log   *logrus.Entry

	// chip is the silicon: memory, engines, BAR0, firmware, doorbells.
	chip *chip.Chip
	mem  memory       // the allocator and handles over the chip's memory (memory.go)
	fwc  *mmio.Client // the driver's side of the firmware mailbox (mmio.go)
	// barBufs recycles BAR_READ/BAR_WRITE's arrays (*barScratch,
	// barwrite.go): a microcode install moves megabytes a call.
	barBufs sync.Pool

	// mu is the driver's per-device lock (rank Device): everything below,
	// and the state of the engines' owners.
	mu        lockrank.Mutex[lockrank.Device]
	openCount int // normal-fd opens not yet released
	procs     processTable
	state     State
	wait      waiters

	h2t          h2tTable
	scrubbing    [4]bool // per HBM channel: a scrub was started and not reaped
	ds           datastores
	nq           nqTable
	reset        resetEngine
	metrics      metrics
	crwl         crwlState
	cinit        [maxCoreSlots]uint32
	modelStarted [maxCoreSlots]uint64 // never incremented on V2-V4 (see DMA_QUEUE_COPY_START)
	dma          dmaState

	// The power/ directories of the class device and of the PCI function.
	classPM, pciPM *runtimePM
	power          powerState // the driver's utilisation samples (power.go)
}

func newDevice(s *System, index int) (*Device, error) {
	d := &Device{Index: index, sys: s, state: StateReady, log: s.log.WithField("device", index),
		classPM: classDevicePM(), pciPM: pciFunctionPM()}
	d.wait.mu = &d.mu
	d.nq.d = d
	d.power.init(d)
	for i := range d.cinit {
		d.cinit[i] = cinitInvalid
	}
	c, err := chip.New(s.chipConfig(index), newChipHost(d))
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", index, err)
	}
	d.chip = c
	s.podRAM[index] = c.Firmware()
	d.mem = memory{pool: mempool.NewOnHost(s.Arch, s.hostSpace, d), chip: c}
	if err := d.ds.init(d); err != nil {
		return nil, fmt.Errorf("device %d: datastore: %w", index, err)
	}
	if err := d.dma.init(d); err != nil {
		return nil, fmt.Errorf("device %d: DMA: %w", index, err)
	}
	if err := d.h2t.init(d); err != nil {
		return nil, fmt.Errorf("device %d: DMA: %w", index, err)
	}
	if err := d.initMailbox(); err != nil {
		return nil, fmt.Errorf("device %d: firmware mailbox: %w", index, err)
	}
	d.mem.pool.ZeroUsage() // sysfs starts counting after probe
	d.mem.pool.SetAllocFault(s.faults.AllocFail.Load)

	d.reset.run(d)
	// The driver resets every device at probe; opens wait for it.
	d.mu.Lock()
	d.reset.startLocked(ncMapDevice, resetRequestAll)
	d.mu.Unlock()
	return d, nil
}

// Chip returns the device's silicon.
func (d *Device) Chip() *chip.Chip { return d.chip }

// System returns the host the device belongs to.
func (d *Device) System() *System { return d.sys }

// State returns the device state.
func (d *Device) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// File is one open file description of a device node.
type File struct {
	Dev *Device
	// FreeAccess marks an O_WRONLY open: it never attaches and reaches
	// only the misc lane.
	FreeAccess bool
}

// Open does what the driver's open does for the calling tgid: count the
// open, wait out a device reset, refuse an invalid device, attach.
func (d *Device) Open(ctx context.Context, caller Caller, flags int) (*File, syscall.Errno) {
	tgid := caller.Tgid
	// The driver tests the O_WRONLY bit alone, so access mode 3 is free
	// access too.
	if flags&syscall.O_WRONLY != 0 {
		return &File{Dev: d, FreeAccess: true}, 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.openCount++
	if d.wait.waitFatalLocked(ctx, caller.fatal, func() bool { return d.state != StateReset }) != 0 {
		d.openCount--
		return nil, syscall.EINTR
	}
	if d.state == StateInvalid {
		d.openCount--
		return nil, syscall.EINVAL
	}
	if !d.procs.attach(tgid) {
		d.openCount--
		d.log.WithFields(logrus.Fields{"tgid": tgid}).Warn("open refused: attach table full")
		return nil, syscall.EBUSY
	}
	if caller.Live {
		d.sys.exits.watch(tgid)
	}
	return &File{Dev: d}, 0
}

// Flush runs on every close() of a descriptor of f, by the closing task.
func (f *File) Flush(ctx context.Context, caller Caller) {
	if f.FreeAccess {
		// Closing a free-access fd frees every core the process marked.
		f.Dev.sys.cores.unmarkAll(caller.Tgid)
		return
	}
	// Only a process that left this device may have left its last one.
	if f.Dev.detach(ctx, caller, false) {
		f.Dev.sys.pins.detached(caller.Tgid)
	}
}

// Release runs when the last reference to the open file goes away.
func (f *File) Release() {
	if f.FreeAccess {
		return
	}
	d := f.Dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.openCount > 0 {
		d.openCount--
	}
	// The last release clears every datastore slot and frees what lives
	// as long as anyone has the device open.
	if d.openCount == 0 {
		d.ds.clearAllLocked()
		for _, c := range d.mem.pool.FreeExpired(mempool.LifespanAllProcess, 0) {
			d.mem.discard(c)
		}
	}
}

// IsAttached reports whether tgid holds an attach slot.
func (d *Device) IsAttached(tgid int32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.procs.find(tgid) != nil
}

// AttachedPIDs returns the attached tgids in slot order.
func (d *Device) AttachedPIDs() []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.procs.tgids()
}

// OpenCount returns the number of normal-fd opens not yet released.
func (d *Device) OpenCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.openCount
}
