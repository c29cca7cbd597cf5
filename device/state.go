package device

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/device/mempool"
)

// The control interface's machine-readable files (docs/control.md):
// version names the interface, state is a JSON snapshot of what the
// emulated driver tracks. Both are neuronfs's own, under neuronfs/.
const (
	// ControlVersion is the control interface's version. It rises only
	// when a file or a field changes meaning or goes away; new files and
	// new fields keep it.
	ControlVersion = 1
	VersionFile    = "version"
	StateFile      = "state"
)

// HostState is the JSON document of StateFile. In every map only
// non-zero values appear: a missing key reads 0.
type HostState struct {
	Version       int           `json:"version"`
	Instance      string        `json:"instance"`
	DriverVersion string        `json:"driver_version"`
	Major         uint32        `json:"major"`
	Faults        []string      `json:"faults"`
	Devices       []DeviceState `json:"devices"`
}

// DeviceState is one device of HostState.
type DeviceState struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// State is ready, reset (one in progress) or invalid (the last
	// driver-internal reset failed).
	State string `json:"state"`
	// PIDs are the processes attached, in the driver's slot order.
	PIDs   []int32 `json:"pids"`
	Opens  int     `json:"opens"`
	Resets Resets  `json:"resets"`
	// HostMemory is the device's host_mem categories, bytes held now.
	HostMemory map[string]uint64 `json:"host_memory"`
	Cores      []CoreState       `json:"cores"`
}

// Resets counts the firmware resets the device performed (the start-up
// reset included; requests served together count once) and says how the
// last one ended: ok, failed, or none before any.
type Resets struct {
	Count int    `json:"count"`
	Last  string `json:"last"`
}

// CoreState is one active core of DeviceState.
type CoreState struct {
	Index int `json:"index"`
	// Memory is the core's memory_usage counters, bytes held now:
	// host_mem, device_mem and the device_mem categories.
	Memory map[string]uint64 `json:"memory"`
	// Counters are the totals of the core's status and other_info
	// counters (reset_req_count, reset_fail_count, ...).
	Counters   map[string]uint64 `json:"counters"`
	Semaphores map[string]uint32 `json:"semaphores"` // by index
	Events     map[string]uint32 `json:"events"`     // by index
	// Queues are the core's notification queues bound to a ring.
	Queues []QueueState `json:"notification_queues"`
	// Compute counts the records the core's engines ran and those they
	// only counted (computestate.go).
	Compute ComputeState `json:"compute"`
}

// QueueState is one bound notification queue: its NOTIFIC slot, the
// ring's size, the offsets of the next record the device writes (tail)
// and of the consumer (head), in bytes, and the records written since the
// ring was bound or the queue re-enabled.
type QueueState struct {
	Slot    int    `json:"slot"`
	Size    uint32 `json:"size"`
	Head    uint32 `json:"head"`
	Tail    uint32 `json:"tail"`
	Enabled bool   `json:"enabled"`
	Records uint64 `json:"records"`
}

var stateNames = map[State]string{StateReset: "reset", StateReady: "ready", StateInvalid: "invalid"}

// State returns a snapshot of the host, as StateFile shows it.
func (s *System) State() HostState {
	st := HostState{
		Version:       ControlVersion,
		Instance:      s.Instance.Name,
		DriverVersion: s.Table.Version.String(),
		Major:         s.Major,
		Faults:        []string{},
	}
	if on, _, _ := strings.Cut(s.faults.status(), "\n"); on != "none" {
		st.Faults = strings.Split(on, ",")
	}
	for _, d := range s.Devices {
		st.Devices = append(st.Devices, d.snapshot())
	}
	return st
}

func (d *Device) snapshot() DeviceState {
	d.mu.Lock()
	ds := DeviceState{
		Index: d.Index, Name: d.Name(), State: stateNames[d.state],
		PIDs: d.procs.tgids(), Opens: d.openCount,
		Resets: Resets{Count: d.reset.hardwareResets, Last: "none"},
	}
	if d.reset.hardwareResets > 0 {
		ds.Resets.Last = "ok"
		if d.reset.lastFailed {
			ds.Resets.Last = "failed"
		}
	}
	d.mu.Unlock()
	if ds.PIDs == nil {
		ds.PIDs = []int32{}
	}
	u := d.mem.pool.Usage()
	ds.HostMemory = map[string]uint64{}
	for _, c := range mempool.HostCategories {
		putNonZero(ds.HostMemory, c.SysfsName(), u.Device[c].Total)
	}
	for nc := 0; nc < d.sys.Arch.CoresPerDevice && nc < maxCoreSlots; nc++ {
		if d.sys.Arch.ActiveCoreMap&(1<<nc) == 0 {
			continue
		}
		cs := CoreState{Index: nc, Memory: map[string]uint64{}, Counters: map[string]uint64{},
			Semaphores: map[string]uint32{}, Events: map[string]uint32{}, Queues: []QueueState{}}
		for _, c := range append([]mempool.Counter{mempool.CounterHostMem, mempool.CounterDeviceMem}, mempool.DeviceCategories...) {
			putNonZero(cs.Memory, c.SysfsName(), u.Core[nc][c].Total)
		}
		for _, name := range statusCounters {
			total, _, _ := d.metrics.Value(nc, "status/"+name)
			putNonZero(cs.Counters, name, total)
		}
		for _, name := range otherInfoCounters {
			total, _, _ := d.metrics.Value(nc, "other_info/"+name)
			putNonZero(cs.Counters, name, total)
		}
		if a, ok := d.chip.Core(nc).Area(); ok {
			for i := range chip.Semaphores {
				putNonZero(cs.Semaphores, fmt.Sprint(i), a.Semaphore(i))
			}
			for i := range chip.Events {
				putNonZero(cs.Events, fmt.Sprint(i), a.Event(i))
			}
		}
		cs.Compute = computeOf(d.chip.Core(nc).EngineReports())
		for _, q := range d.chip.Core(nc).NQSlots() {
			cs.Queues = append(cs.Queues, QueueState{Slot: q.Slot, Size: q.Size, Head: q.Head, Tail: q.Tail, Enabled: q.Enabled, Records: q.Records})
		}
		ds.Cores = append(ds.Cores, cs)
	}
	return ds
}

func putNonZero[V uint32 | uint64](m map[string]V, k string, v V) {
	if v != 0 {
		m[k] = v
	}
}

// stateJSON renders StateFile.
func (fs Sysfs) stateJSON() string {
	b, err := json.MarshalIndent(fs.s.State(), "", " ")
	if err != nil {
		// Only unsupported types fail, which HostState has none of.
		panic(err)
	}
	return string(b) + "\n"
}

// stateAttributes are the version and state control files.
func (fs Sysfs) stateAttributes() []Attr {
	return []Attr{
		{Path: VersionFile, Mode: 0o444, Show: func() string { return fmt.Sprintf("%d\n", ControlVersion) }},
		{Path: StateFile, Mode: 0o444, Show: fs.stateJSON},
	}
}
