package device

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/dhal"
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
	// increments ring a core's exec doorbell; nil takes any semaphore
	// until a delivered request teaches the core its doorbell
	// (chip/execqueue.go).
	InferenceStart *uint32
	// ExecLatency is how long an emulated execution takes between its
	// START and END records (default 0).
	ExecLatency time.Duration
	// HangEnd is how long a core's run may stay blocked on an actor
	// neuronfs does not emulate (a Q7 core, a TOP_SP) before it is ended
	// with error records the runtime's harvest drains (chip/hangend.go):
	// 0 is DefaultHangEnd, negative never.
	HangEnd time.Duration
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

// DefaultHangEnd is short of the runtime's shortest harvest budget
// (1000 × a model's timeout in seconds, 59900437456): a watcher looks
// twice, a budget apart, so the records land within about half a second.
const DefaultHangEnd = 250 * time.Millisecond

// DefaultTimeScale makes the driver's waits a thousand times shorter than
// on real hardware.
const DefaultTimeScale = 0.001

// defaultResetLatency is the emulated firmware's reset time at scale 1.
const defaultResetLatency = 100 * time.Millisecond

// resolve looks up what cfg names: the instance (with cfg.Devices
// devices), its architecture's facts and the emulated driver version's
// command table, which must support that architecture.
func (cfg Config) resolve() (*dhal.Instance, *dhal.ArchFacts, *ioctl.Table, error) {
	if cfg.Instance == "" {
		return nil, nil, nil, fmt.Errorf("device: no instance type given")
	}
	inst, err := dhal.LookupInstance(cfg.Instance)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Arch != 0 && cfg.Arch != inst.Product.Arch {
		return nil, nil, nil, fmt.Errorf("device: instance %s is architecture %v, not %v", inst.Name, inst.Product.Arch, cfg.Arch)
	}
	if cfg.Devices != 0 && cfg.Devices != inst.Devices {
		if inst, err = inst.WithDevices(cfg.Devices); err != nil {
			return nil, nil, nil, err
		}
	}
	facts, err := dhal.Facts(inst.Product.Arch)
	if err != nil {
		return nil, nil, nil, err
	}
	version := cfg.DriverVersion
	if version == "" {
		version = ioctl.DefaultVersion
	}
	table, err := ioctl.ForVersion(version)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, ok := table.Compat[uint32(facts.Arch)]; !ok {
		return nil, nil, nil, fmt.Errorf("device: driver %s does not support %s (%s)", version, inst.Product.Name, facts.Arch)
	}
	return inst, facts, table, nil
}

// logger is cfg.Log, or a logger that shows warnings and worse.
func (cfg Config) logger() *logrus.Entry {
	if cfg.Log != nil {
		return cfg.Log
	}
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l)
}
