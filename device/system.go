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

// Config selects what the emulated host looks like.
type Config struct {
	Instance string // EC2 instance type, e.g. trn2.48xlarge
	Devices  int    // 0: the instance's device count
	Arch     dhal.Arch
	// DriverVersion picks the emulated driver (default ioctl.DefaultVersion).
	DriverVersion string
	// Revision is the PCI revision id reported by DEVICE_BASIC_INFO. Real
	// silicon reports a value <= 0xEF; 240 means hardware emulator, 255 QEMU.
	Revision uint32
	// Major is the character-device major the emulated driver owns.
	Major uint32
	// TimeScale multiplies the driver's deadlines and poll intervals
	// (reset, ...): 1.0 is the real durations; the default is 0.001.
	TimeScale float64
	// ResetLatency is how long the emulated firmware takes to reset a core
	// or the device (default 100 ms scaled: 0.1 ms). The driver gives up
	// after 1 s scaled.
	ResetLatency time.Duration
	// FailResets makes every reset fail, to test error paths.
	FailResets bool
	// Strict refuses (and logs) one process's use of a chunk another
	// process allocated and did not hand over, which the driver allows.
	Strict bool
	// InferenceStart is the index of the inference-start semaphore whose
	// increments ring a core's exec doorbell; nil takes any semaphore.
	InferenceStart *uint32
	// ExecLatency is how long an emulated execution takes between its
	// START and END records (default 0).
	ExecLatency time.Duration
	// Pod sets up pod election on UltraServer hosts and the PDS spoof
	// (pod name, coordinator, userver_* parameters); the system fills in
	// the rest.
	Pod pod.Config
	// NodeSerial, if not 0, is device 0's serial number: the one pod
	// election compares. The other devices' serials derive from it.
	NodeSerial uint64
	// Backing is where physical memory lives (default: a memfd per
	// device).
	Backing Backing
	// MemoryLimit caps, in bytes, what the backing holds (see memLimit):
	// 0 is the default (half of host RAM for memfd, none for a file),
	// negative no limit.
	MemoryLimit int64
	// ExecTrace, if set, is a file to write the engines' and DMA queues'
	// activity to, as Chrome/Perfetto trace events (exectrace.go).
	ExecTrace string
	Log       *logrus.Entry
}

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
	watched     map[int32]*os.File // attached processes' pidfds (watch.go)
	pins        pins               // pinned host memory by process (pin.go)
	cores       coreReservations
	dsClearTick uint64 // orders datastore slot releases host-wide
	notifyDelay bool   // sysfs info/notify_delay: "0" enables sysfs_notify

	stopSweep, sweepDone chan struct{} // the semaphore-window sweeper
	stopPower, powerDone chan struct{} // the power sampler (power.go)
	epoch                time.Time     // zero of the chips' notification clocks
	inferenceStart       int           // -1: any semaphore
	execLatency          time.Duration
	execTrace            *exectrace.Writer // nil: no --exec-trace
}

// NewSystem builds the devices described by cfg.
func NewSystem(cfg Config) (*System, error) {
	if cfg.Instance == "" {
		return nil, fmt.Errorf("device: no instance type given")
	}
	inst, err := dhal.LookupInstance(cfg.Instance)
	if err != nil {
		return nil, err
	}
	if cfg.Arch != 0 && cfg.Arch != inst.Product.Arch {
		return nil, fmt.Errorf("device: instance %s is architecture %v, not %v", inst.Name, inst.Product.Arch, cfg.Arch)
	}
	if cfg.Devices != 0 && cfg.Devices != inst.Devices {
		if inst, err = inst.WithDevices(cfg.Devices); err != nil {
			return nil, err
		}
	}
	facts, err := dhal.Facts(inst.Product.Arch)
	if err != nil {
		return nil, err
	}
	version := cfg.DriverVersion
	if version == "" {
		version = ioctl.DefaultVersion
	}
	table, err := ioctl.ForVersion(version)
	if err != nil {
		return nil, err
	}
	if _, ok := table.Compat[uint32(facts.Arch)]; !ok {
		return nil, fmt.Errorf("device: driver %s does not support %s (%s)", version, inst.Product.Name, facts.Arch)
	}
	log := cfg.Log
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		log = logrus.NewEntry(l)
	}
	s := &System{
		Instance: inst,
		Arch:     facts,
		Table:    table,
		Revision: cfg.Revision,
		Major:    cfg.Major,
		log:      log.WithField("instance", inst.Name),

		resetLatency: cfg.ResetLatency,
		strict:       cfg.Strict,
		quirks:       table.Quirks,
		id:           identity{inst: inst, nodeSerial: cfg.NodeSerial},
		podRAM:       make(podRAM, inst.Devices),
		backing:      cfg.Backing,
	}
	if s.backing, err = cfg.Backing.Open(facts.PhysicalSpan()); err != nil {
		return nil, fmt.Errorf("memory backing: %w", err)
	}
	s.epoch = time.Now()
	s.memLimit.init(cfg.Backing, cfg.MemoryLimit)
	s.inferenceStart, s.execLatency = -1, cfg.ExecLatency
	if cfg.InferenceStart != nil {
		s.inferenceStart = int(*cfg.InferenceStart)
	}
	s.faults.sys = s
	s.faults.ResetFail.Store(cfg.FailResets)
	s.timeScale = cfg.TimeScale
	if s.timeScale <= 0 {
		s.timeScale = DefaultTimeScale
	}
	if s.resetLatency == 0 {
		s.resetLatency = s.scaled(defaultResetLatency)
	}
	s.budgets = newBudgets(s.Table, s.Arch, s.scaled, s.resetLatency)
	s.dispatch = newDispatcher(s.Table)
	s.watched = map[int32]*os.File{}
	s.hostSpace = mempool.NewHostSpace()
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
	s.stopSweep = make(chan struct{})
	s.sweepDone = make(chan struct{})
	go func() {
		defer close(s.sweepDone)
		chips := make([]*chip.Chip, len(s.Devices))
		for i, d := range s.Devices {
			chips[i] = d.chip
		}
		chip.RunSweeper(s.stopSweep, s.log, s.epoch, chips, func(i int) bool { return s.Devices[i].OpenCount() > 0 })
	}()
	// Like probe, construction ends when every device's first reset has.
	for _, d := range s.Devices {
		d.mu.Lock()
		d.wait.waitFatalLocked(context.Background(), func() bool { return false }, func() bool { return d.state != StateReset })
		d.mu.Unlock()
	}
	// The driver's first power sample follows the probe at once: it rolls
	// up an empty minute, stamped with the load time.
	s.powerTick(time.Now(), powerPeriod)
	s.stopPower = make(chan struct{})
	s.powerDone = make(chan struct{})
	go func() {
		defer close(s.powerDone)
		s.powerSampler(s.stopPower)
	}()
	return s, nil
}

// DefaultTimeScale makes the driver's waits a thousand times shorter than
// on real hardware.
const DefaultTimeScale = 0.001

// defaultResetLatency is the emulated firmware's reset time at scale 1.
const defaultResetLatency = 100 * time.Millisecond

// scaled applies the time scale to one of the driver's durations.
func (s *System) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.timeScale)
}

// Close releases the devices' memory. Nothing may use the system after.
func (s *System) Close() {
	s.closeWatches()
	if s.stopSweep != nil {
		close(s.stopSweep)
		<-s.sweepDone
	}
	s.stopPowerSampler()
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
