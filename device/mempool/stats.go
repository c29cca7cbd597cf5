package mempool

// Counter identifies one of the driver's memory-usage counters. Values
// equal the driver's non-datastore sysfs metric ids
// (nsysfsmetric_non_nds_ids, neuron_sysfs_metrics.h).
type Counter int

// Counters kept by the allocator. Where sysfs shows them:
//   - CounterHostMem, CounterDeviceMem and the CounterDevice* categories:
//     per core, neuron<N>/neuron_core<c>/stats/memory_usage/{host_mem,device_mem[/<category>]}
//   - the CounterHost* categories: per device,
//     neuron<N>/stats/memory_usage/host_mem/<category>
//
// The allocator updates whichever (location, counter) pair the request
// names, so a device memory type requested for host memory lands in a
// device-level slot sysfs never shows; the snapshot keeps every slot.
const (
	CounterHostMem Counter = iota
	CounterDeviceMem
	CounterHostUncategorized
	CounterHostCode
	CounterHostTensors
	CounterHostConstants
	CounterHostMisc
	CounterHostNcdev
	CounterHostNotification
	CounterHostDMARings
	CounterDeviceUncategorized
	CounterDeviceCode
	CounterDeviceTensors
	CounterDeviceConstants
	CounterDeviceScratchpad
	CounterDeviceMisc
	CounterDeviceNcdev
	CounterDeviceCollectives
	CounterDeviceScratchpadNonshared
	CounterDeviceNotification
	CounterDeviceDMARings
	NumCounters
)

// HostCategories lists the per-device host_mem category counters in the
// order the driver registers their sysfs directories.
var HostCategories = []Counter{
	CounterHostCode, CounterHostTensors, CounterHostConstants, CounterHostMisc,
	CounterHostNcdev, CounterHostNotification, CounterHostDMARings, CounterHostUncategorized,
}

// DeviceCategories lists the per-core device_mem category counters in the
// order the driver registers their sysfs directories.
var DeviceCategories = []Counter{
	CounterDeviceCode, CounterDeviceTensors, CounterDeviceConstants, CounterDeviceScratchpad,
	CounterDeviceMisc, CounterDeviceNcdev, CounterDeviceCollectives, CounterDeviceScratchpadNonshared,
	CounterDeviceNotification, CounterDeviceDMARings, CounterDeviceUncategorized,
}

var counterNames = [NumCounters]string{
	CounterHostMem:                   "host_mem",
	CounterDeviceMem:                 "device_mem",
	CounterHostUncategorized:         "uncategorized",
	CounterHostCode:                  "dma_buffers",
	CounterHostTensors:               "tensors",
	CounterHostConstants:             "constants",
	CounterHostMisc:                  "application_memory",
	CounterHostNcdev:                 "driver_memory",
	CounterHostNotification:          "notifications",
	CounterHostDMARings:              "dma_rings",
	CounterDeviceUncategorized:       "uncategorized",
	CounterDeviceCode:                "model_code",
	CounterDeviceTensors:             "tensors",
	CounterDeviceConstants:           "constants",
	CounterDeviceScratchpad:          "model_shared_scratchpad",
	CounterDeviceMisc:                "runtime_memory",
	CounterDeviceNcdev:               "driver_memory",
	CounterDeviceCollectives:         "collectives",
	CounterDeviceScratchpadNonshared: "nonshared_scratchpad",
	CounterDeviceNotification:        "notifications",
	CounterDeviceDMARings:            "dma_rings",
}

// SysfsName is the counter's directory name in the sysfs metrics tree.
func (c Counter) SysfsName() string {
	if c < 0 || c >= NumCounters {
		return ""
	}
	return counterNames[c]
}

// categoryCounter maps a memory type (mem_alloc_category_t) to its
// category counter (the driver's mem_alloc_type_to_sysfs_counter table).
// Out-of-range types count as uncategorized for their location.
var categoryCounter = [MemTypeMax]Counter{
	MemTypeUnknownHost:                CounterHostUncategorized,
	MemTypeCodeHost:                   CounterHostCode,
	MemTypeTensorsHost:                CounterHostTensors,
	MemTypeConstantsHost:              CounterHostConstants,
	MemTypeMiscHost:                   CounterHostMisc,
	MemTypeNcdevHost:                  CounterHostNcdev,
	MemTypeNotificationHost:           CounterHostNotification,
	MemTypeUnknownDevice:              CounterDeviceUncategorized,
	MemTypeCodeDevice:                 CounterDeviceCode,
	MemTypeTensorsDevice:              CounterDeviceTensors,
	MemTypeConstantsDevice:            CounterDeviceConstants,
	MemTypeScratchpadDevice:           CounterDeviceScratchpad,
	MemTypeMiscDevice:                 CounterDeviceMisc,
	MemTypeNcdevDevice:                CounterDeviceNcdev,
	MemTypeCollectivesDevice:          CounterDeviceCollectives,
	MemTypeScratchpadNonsharedDevice:  CounterDeviceScratchpadNonshared,
	MemTypeNotificationDevice:         CounterDeviceNotification,
	MemTypeDMARingsHost:               CounterHostDMARings,
	MemTypeDMARingsDevice:             CounterDeviceDMARings,
	MemTypeContiguousScratchpadDevice: CounterDeviceScratchpad,
}

func categoryOf(memType uint32, loc Location) Counter {
	if memType < MemTypeMax {
		return categoryCounter[memType]
	}
	if loc == LocHost {
		return CounterHostUncategorized
	}
	return CounterDeviceUncategorized
}

// Stat is one sysfs counter: total is the running sum, present the size of
// the last change (also on decrements), peak the highest total seen.
type Stat struct {
	Total, Present, Peak uint64
}

func (s *Stat) inc(delta uint64) {
	if delta == 0 {
		return
	}
	s.Total += delta
	s.Present = delta
	if s.Total > s.Peak {
		s.Peak = s.Total
	}
}

// dec subtracts without a floor (a total zeroed through sysfs wraps, as in
// the driver) and leaves the peak alone.
func (s *Stat) dec(delta uint64) {
	if delta == 0 {
		return
	}
	s.Total -= delta
	s.Present = delta
}

// Field selects one value of a Stat.
type Field int

const (
	FieldTotal Field = iota
	FieldPresent
	FieldPeak
)

// UsageSnapshot is a copy of all memory counters of one device.
type UsageSnapshot struct {
	Device [NumCounters]Stat        // device-wide slots (the driver's nc_id -1)
	Core   [MaxNC][NumCounters]Stat // per-core slots
}

type usage UsageSnapshot

func (u *usage) stat(nc int, c Counter) *Stat {
	if nc < 0 {
		return &u.Device[c]
	}
	return &u.Core[nc][c]
}

// account applies the allocation (alloc) or the free of chunk c to the
// counters the driver touches: the per-core host_mem/device_mem total of
// c's core, and the category counter, per core for device memory and
// device-wide for host memory.
func (u *usage) account(c *Chunk, alloc bool) {
	total, catNC := CounterDeviceMem, c.NCID
	if c.Loc == LocHost {
		total, catNC = CounterHostMem, -1
	}
	cat := categoryOf(c.MemType, c.Loc)
	if alloc {
		u.stat(c.NCID, total).inc(c.Size)
		u.stat(catNC, cat).inc(c.Size)
		return
	}
	u.stat(catNC, cat).dec(c.Size)
	u.stat(c.NCID, total).dec(c.Size)
}
