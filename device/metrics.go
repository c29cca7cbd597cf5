package device

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// The driver's sysfs metrics tree: per-core status and other_info
// counters (fed from datastores at release and by the reset path), memory
// usage by category (fed live by the allocator), and a few hardware and
// power readings. Names and layout are the driver's tables.

// statusCounters are neuron_core<c>/stats/status/<name>/{total,present}.
var statusCounters = []string{
	"success", "failure", "timeout", "exec_bad_input", "hw_error",
	"execute_completed_with_error", "execute_completed_with_num_error", "generic_error",
	"resource_error", "resource_nc_error", "execute_failed_to_queue", "invalid_error",
	"unsupported_neff_version", "oob_error", "hw_collectives_error", "hw_hbm_ue_error",
	"hw_nc_ue_error", "hw_dma_abort_error", "execute_sw_nq_overflow", "execute_sw_semaphore_error",
	"execute_sw_event_error", "execute_sw_psum_collision", "execute_sw_sequencer_fatal",
	"hw_repairable_hbm_ue_error",
}

// otherInfoCounters are neuron_core<c>/stats/other_info/<name>/{total,present}.
var otherInfoCounters = []string{
	"model_load_count", "reset_req_count", "reset_fail_count", "inference_count", "flop_count", "nc_time_in_use",
}

// peRowGroups is the number of PE-array row groups in tensor_engine/pe_cntrs.
const peRowGroups = 4

// counter is one sysfs counter: total, the last delta, and the highest total.
type counter struct{ total, present, peak uint64 }

func (c *counter) add(delta uint64) {
	if delta == 0 {
		return
	}
	c.total += delta
	c.present = delta
	c.peak = max(c.peak, c.total)
}

func (c *counter) sub(delta uint64) {
	if delta == 0 {
		return
	}
	c.total -= delta
	c.present = delta
}

// metrics holds a device's counters, keyed by their path below stats/:
// core counters under core index c, device counters under -1.
type metrics struct {
	mu       lockrank.Mutex[lockrank.Metrics]
	counters map[metricKey]*counter
}

type metricKey struct {
	core int // -1: device level
	path string
}

func (m *metrics) get(core int, path string) *counter {
	if m.counters == nil {
		m.counters = map[metricKey]*counter{}
	}
	k := metricKey{core, path}
	c, ok := m.counters[k]
	if !ok {
		c = &counter{}
		m.counters[k] = c
	}
	return c
}

// Add adds delta to a counter.
func (m *metrics) Add(core int, path string, delta uint64) {
	m.mu.Lock()
	m.get(core, path).add(delta)
	m.mu.Unlock()
}

// Sub removes delta from a counter.
func (m *metrics) Sub(core int, path string, delta uint64) {
	m.mu.Lock()
	m.get(core, path).sub(delta)
	m.mu.Unlock()
}

// Value returns a counter.
func (m *metrics) Value(core int, path string) (total, present, peak uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.get(core, path)
	return c.total, c.present, c.peak
}

// counterAttrs makes the total/present(/peak) files of one counter
// directory; writing anything zeroes that value.
func (m *metrics) counterAttrs(dir string, core int, path string, withPeak bool) []Attr {
	field := func(name string, sel func(*counter) *uint64) Attr {
		return Attr{
			Path: dir + "/" + name, Mode: modeMetricAttr,
			Show: func() string {
				m.mu.Lock()
				defer m.mu.Unlock()
				return fmt.Sprintf("%d\n", *sel(m.get(core, path)))
			},
			Store: func([]byte) syscall.Errno {
				m.mu.Lock()
				defer m.mu.Unlock()
				*sel(m.get(core, path)) = 0
				return 0
			},
		}
	}
	out := []Attr{
		field("total", func(c *counter) *uint64 { return &c.total }),
		field("present", func(c *counter) *uint64 { return &c.present }),
	}
	if withPeak {
		out = append(out, field("peak", func(c *counter) *uint64 { return &c.peak }))
	}
	return out
}

// memCounterAttrs makes the total/present/peak files of one memory counter,
// which the allocator keeps (core nc, or -1 for the device).
func (d *Device) memCounterAttrs(dir string, nc int, ctr mempool.Counter) []Attr {
	stat := func() mempool.Stat {
		u := d.mem.pool.Usage()
		if nc < 0 {
			return u.Device[ctr]
		}
		return u.Core[nc][ctr]
	}
	field := func(name string, f mempool.Field, get func(mempool.Stat) uint64) Attr {
		return Attr{
			Path: dir + "/" + name, Mode: modeMetricAttr,
			Show: func() string { return fmt.Sprintf("%d\n", get(stat())) },
			Store: func([]byte) syscall.Errno {
				d.mem.pool.ResetCounter(nc, ctr, f)
				return 0
			},
		}
	}
	return []Attr{
		field("total", mempool.FieldTotal, func(s mempool.Stat) uint64 { return s.Total }),
		field("present", mempool.FieldPresent, func(s mempool.Stat) uint64 { return s.Present }),
		field("peak", mempool.FieldPeak, func(s mempool.Stat) uint64 { return s.Peak }),
	}
}

// metricAttributes returns the device's stats tree (paths relative to the
// device directory).
func (d *Device) metricAttributes() []Attr {
	m := &d.metrics
	var out []Attr
	for c := 0; c < d.sys.Arch.CoresPerDevice; c++ {
		if d.sys.Arch.ActiveCoreMap&(1<<c) == 0 {
			continue
		}
		base := fmt.Sprintf("neuron_core%d/stats", c)
		for _, name := range statusCounters {
			out = append(out, m.counterAttrs(base+"/status/"+name, c, "status/"+name, false)...)
		}
		for _, name := range otherInfoCounters {
			out = append(out, m.counterAttrs(base+"/other_info/"+name, c, "other_info/"+name, false)...)
		}
		out = append(out, d.memCounterAttrs(base+"/memory_usage/host_mem", c, mempool.CounterHostMem)...)
		out = append(out, d.memCounterAttrs(base+"/memory_usage/device_mem", c, mempool.CounterDeviceMem)...)
		for _, cat := range mempool.DeviceCategories {
			out = append(out, d.memCounterAttrs(base+"/memory_usage/device_mem/"+cat.SysfsName(), c, cat)...)
		}
		out = append(out, Attr{Path: base + "/tensor_engine/pe_cntrs", Mode: modeMetricAttr, Show: peCounters, Store: ignoreWrite})
	}
	for _, cat := range mempool.HostCategories {
		out = append(out, d.memCounterAttrs("stats/memory_usage/host_mem/"+cat.SysfsName(), -1, cat)...)
	}
	// ECC counts come from the firmware's registers (raised by fault
	// injection), power from the firmware's samples (power.go).
	out = append(out,
		Attr{Path: "stats/hardware/sram_ecc_uncorrected", Mode: modeMetricAttr, Store: ignoreWrite, Show: func() string {
			v, _ := d.chip.Firmware().Read32(mmio.RegECCSRAM)
			return fmt.Sprintf("%d\n", v&0xffff)
		}},
		Attr{Path: "stats/hardware/mem_ecc_uncorrected", Mode: modeMetricAttr, Store: ignoreWrite, Show: func() string {
			return fmt.Sprintf("%d\n", d.hbmErrorCount(false))
		}},
		Attr{Path: "stats/hardware/mem_ecc_repairable_uncorrected", Mode: modeMetricAttr, Store: ignoreWrite, Show: func() string {
			return fmt.Sprintf("%d\n", d.hbmErrorCount(true))
		}},
		Attr{Path: "stats/power/utilization", Mode: modeMetricAttr, Store: ignoreWrite, Show: d.power.show},
	)
	return out
}

// peCounters renders tensor_engine/pe_cntrs: no compute runs, so every
// PE-array cycle counter reads 0.
func peCounters() string {
	var b strings.Builder
	b.WriteString("xrow_grp,mm_active,wl_active,idle\n")
	for i := 0; i < peRowGroups; i++ {
		fmt.Fprintf(&b, "%d,0,0,0\n", i)
	}
	return b.String()
}
