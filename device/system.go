package device

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/chip/exectrace"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/pod"
)

// System is the emulated host: every device of one architecture plus the
// driver-global state that spans devices.
type System struct {
	Instance *dhal.Instance
	Arch     *dhal.ArchFacts
	Table    *ioctl.Table
	Revision uint32
	Major    uint32
	Devices  []*Device

	log      *logrus.Entry
	dispatch *dispatcher
	onPanic  atomic.Pointer[func(p any)]

	resetLatency time.Duration
	timeScale    float64
	budgets      budgets // the watchdog's request budgets (budget.go)
	faults       Faults
	strict       bool
	// quirks are the emulated version's behaviour changes.
	quirks ioctl.Quirks
	// hostSpace is the host's DMA address space, shared by the devices.
	hostSpace *mempool.HostSpace
	id        identity
	podRAM    podRAM // each device's firmware, for the election
	backing   Backing
	memLimit  memLimit
	pod       *pod.Election // nil outside UltraServer and PDS hosts

	mu          lockrank.Mutex[lockrank.Host] // guards the driver-global state below
	metrics     metricsCtl
	exits       exitWatch // attached processes' pidfds (watch.go)
	pins        pinTable  // pinned host memory by process (pin.go)
	cores       coreMarks // host-wide core reservations (coremarks.go)
	dsClearTick uint64    // orders datastore slot releases host-wide
	notifyDelay bool      // sysfs info/notify_delay: "0" enables sysfs_notify

	sweeper        loop         // the semaphore-window sweeper
	sampler        powerSampler // power utilisation (powersampler.go)
	epoch          time.Time    // zero of the chips' notification clocks
	inferenceStart int          // -1: any semaphore
	execLatency    time.Duration
	hangEnd        time.Duration     // Config.HangEnd; 0 never
	execTrace      *exectrace.Writer // nil: no --exec-trace
}

// NewSystem builds the devices described by cfg.
func NewSystem(cfg Config) (*System, error) {
	inst, facts, table, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := newSystem(cfg, inst, facts, table)
	if s.backing, err = cfg.Backing.Open(facts.PhysicalSpan()); err != nil {
		return nil, fmt.Errorf("memory backing: %w", err)
	}
	s.memLimit.init(cfg.Backing, cfg.MemoryLimit)
	s.faults.ResetFail.Store(cfg.FailResets)
	// Before the devices: their first resets feed the election.
	s.pod = s.newPodElection(cfg.Pod)
	if err := s.openExecTrace(cfg.ExecTrace); err != nil {
		s.Close()
		return nil, err
	}
	for i := 0; i < inst.Devices; i++ {
		d, err := newDevice(s, i)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Devices = append(s.Devices, d)
	}
	s.startSweeper()
	// Like probe, construction ends when every device's first reset has.
	for _, d := range s.Devices {
		d.mu.Lock()
		d.wait.waitFatalLocked(context.Background(), func() bool { return false }, func() bool { return d.state != StateReset })
		d.mu.Unlock()
	}
	s.sampler.start(s.Devices)
	return s, nil
}

// newSystem is the system's settings from cfg, before anything is opened
// or started.
func newSystem(cfg Config, inst *dhal.Instance, facts *dhal.ArchFacts, table *ioctl.Table) *System {
	s := &System{
		Instance: inst,
		Arch:     facts,
		Table:    table,
		Revision: cfg.Revision,
		Major:    cfg.Major,
		log:      cfg.logger().WithField("instance", inst.Name),

		resetLatency:   cfg.ResetLatency,
		timeScale:      cfg.TimeScale,
		strict:         cfg.Strict,
		quirks:         table.Quirks,
		id:             identity{inst: inst, nodeSerial: cfg.NodeSerial},
		podRAM:         make(podRAM, inst.Devices),
		backing:        cfg.Backing,
		dispatch:       newDispatcher(table),
		hostSpace:      mempool.NewHostSpace(),
		epoch:          time.Now(),
		inferenceStart: -1,
		execLatency:    cfg.ExecLatency,
		hangEnd:        hangEndOf(cfg.HangEnd),
	}
	if cfg.InferenceStart != nil {
		s.inferenceStart = int(*cfg.InferenceStart)
	}
	s.faults.sys = s
	s.exits = exitWatch{s: s, files: map[int32]*os.File{}}
	s.pins.s, s.cores.s = s, s
	if s.timeScale <= 0 {
		s.timeScale = DefaultTimeScale
	}
	if s.resetLatency == 0 {
		s.resetLatency = s.scaled(defaultResetLatency)
	}
	s.budgets = newBudgets(table, facts, s.scaled, s.resetLatency)
	return s
}

// startSweeper starts the goroutine that sweeps the semaphore windows of
// the chips whose device is open.
func (s *System) startSweeper() {
	chips := make([]*chip.Chip, len(s.Devices))
	for i, d := range s.Devices {
		chips[i] = d.chip
	}
	s.sweeper.start(func(stop <-chan struct{}) {
		chip.RunSweeper(stop, s.log, s.epoch, chips, func(i int) bool { return s.Devices[i].OpenCount() > 0 })
	})
}

// scaled applies the time scale to one of the driver's durations.
func (s *System) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.timeScale)
}

// Close releases the devices' memory. Nothing may use the system after.
func (s *System) Close() {
	s.exits.close()
	s.sweeper.halt()
	s.sampler.halt()
	if s.pod != nil {
		s.pod.Close()
	}
	for _, d := range s.Devices {
		close(d.reset.stop)
		d.chip.Stop()
	}
	s.CloseExecTrace()
	for _, d := range s.Devices {
		d.chip.Close()
	}
	s.backing.Close()
}

// Device returns device i, or nil.
func (s *System) Device(i int) *Device {
	if i < 0 || i >= len(s.Devices) {
		return nil
	}
	return s.Devices[i]
}

// hangEndOf is Config.HangEnd as the chips take it: 0 the default,
// negative never (0).
func hangEndOf(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultHangEnd
	case d < 0:
		return 0
	}
	return d
}
