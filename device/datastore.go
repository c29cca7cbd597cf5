package device

import (
	"encoding/binary"
	"syscall"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The datastore: 16 host-memory slots of 256 KiB per device, allocated at
// probe, that a runtime process maps and fills with its counters, and
// that monitoring tools map read-side by pid. When the owner releases its
// slot (or its last fd closes), the per-core counters are added into the
// sysfs metrics.

const (
	datastoreSlots = 16
	datastoreSize  = 256 << 10

	// Layout of a slot: an 8-byte header, 31 device counters, then 31
	// counters for each of the first 4 cores; further counters of those
	// cores at dsExtStart (64 each); cores 4-15 complete at dsCoreStart
	// (95 counters plus 1 of padding each).
	dsNDCounters    = 31
	dsNCCounters    = 31
	dsNCStart       = 8 + 8*dsNDCounters
	dsFirstCores    = 4
	dsExtStart      = 55936
	dsExtCounters   = 64
	dsCoreStart     = 57984
	dsCoreCounters  = dsNCCounters + dsExtCounters + 1
	dsMaxExtraCores = 12
)

// Datastore counter ids (NDS_NC_COUNTER_*) that sysfs aggregates.
const (
	dsTimeInUse      = 0
	dsModelLoadCount = 27
	dsInferenceCount = 28
	dsMACCount       = 29
)

// statusCounterIDs maps statusCounters (same order) to datastore ids.
var statusCounterIDs = []int{1, 16, 4, 5, 11, 2, 3, 7, 17, 18, 6, 19, 20, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40}

// datastores owns a device's datastore slots; it lives under the device
// lock. Releasing a slot reaches back to the owning device for its
// memory, chip and metrics.
type datastores struct {
	d     *Device
	slots [datastoreSlots]datastoreSlot
}

type datastoreSlot struct {
	pid       int32
	clearTick uint64
	chunk     *mempool.Chunk
}

// init allocates the slots at probe.
func (ds *datastores) init(d *Device) error {
	ds.d = d
	for i := range ds.slots {
		c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: datastoreSize, Host: true, MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
		if err != nil {
			return err
		}
		ds.slots[i].chunk = c
	}
	return nil
}

// dsCounter reads counter id of core nc from a slot's memory.
func dsCounter(mem []byte, nc, id int) uint64 {
	var off int
	switch {
	case nc < dsFirstCores && id < dsNCCounters:
		off = dsNCStart + 8*(nc*dsNCCounters+id)
	case nc < dsFirstCores && id-dsNCCounters < dsExtCounters:
		off = dsExtStart + 8*(nc*dsExtCounters+id-dsNCCounters)
	case nc-dsFirstCores < dsMaxExtraCores && id < dsNCCounters+dsExtCounters:
		off = dsCoreStart + 8*((nc-dsFirstCores)*dsCoreCounters+id)
	default:
		return 0
	}
	return binary.LittleEndian.Uint64(mem[off:])
}

// releaseLocked aggregates a slot into the metrics and clears it.
func (ds *datastores) releaseLocked(s *datastoreSlot) {
	d := ds.d
	c := s.chunk
	if mem, done, res := d.mem.view(c, 0, datastoreSize); res == 0 {
		for nc := 0; nc < d.sys.Arch.CoresPerDevice; nc++ {
			if d.sys.Arch.ActiveCoreMap&(1<<nc) == 0 {
				continue
			}
			for i, name := range statusCounters {
				d.metrics.Add(nc, "status/"+name, dsCounter(mem, nc, statusCounterIDs[i]))
			}
			d.metrics.Add(nc, "other_info/model_load_count", dsCounter(mem, nc, dsModelLoadCount))
			d.metrics.Add(nc, "other_info/inference_count", dsCounter(mem, nc, dsInferenceCount))
			d.metrics.Add(nc, "other_info/flop_count", 2*dsCounter(mem, nc, dsMACCount)) // a MAC is two flops
			d.metrics.Add(nc, "other_info/nc_time_in_use", dsCounter(mem, nc, dsTimeInUse))
		}
		done()
	}
	ds.clearLocked(s)
}

// clearLocked frees a slot for reuse and zeroes its memory.
func (ds *datastores) clearLocked(s *datastoreSlot) {
	d := ds.d
	d.sys.mu.Lock()
	d.sys.dsClearTick++
	s.clearTick = d.sys.dsClearTick
	d.sys.mu.Unlock()
	s.pid = 0
	d.chip.Punch(s.chunk.PA, s.chunk.Size) // reads back as zeros
}

// clearAllLocked clears every slot in use: the device's last release.
func (ds *datastores) clearAllLocked() {
	for i := range ds.slots {
		if ds.slots[i].pid != 0 {
			ds.clearLocked(&ds.slots[i])
		}
	}
}

func (ds *datastores) findLocked(pid int32) *datastoreSlot {
	for i := range ds.slots {
		if ds.slots[i].pid == pid {
			return &ds.slots[i]
		}
	}
	return nil
}

// freeLocked picks a slot never used, else the one released longest ago.
func (ds *datastores) freeLocked() *datastoreSlot {
	var best *datastoreSlot
	for i := range ds.slots {
		s := &ds.slots[i]
		if s.pid != 0 {
			continue
		}
		if s.clearTick == 0 {
			return s
		}
		if best == nil || s.clearTick < best.clearTick {
			best = s
		}
	}
	return best
}

func acquireNeuronDS(r *Request, v *ioctl.NeuronDSInfo) Result {
	d := r.Dev()
	d.mu.Lock()
	var s *datastoreSlot
	if v.PID != 0 {
		// A monitor asks for a process's slot.
		if s = d.ds.findLocked(v.PID); s == nil {
			d.mu.Unlock()
			return Errno(syscall.ENOENT)
		}
	} else if s = d.ds.findLocked(r.Caller.Tgid); s == nil {
		if s = d.ds.freeLocked(); s == nil {
			d.mu.Unlock()
			return Errno(syscall.ENOMEM)
		}
		s.pid = r.Caller.Tgid
	}
	v.MmapOffset, v.Size = s.chunk.PA, datastoreSize
	d.mu.Unlock()
	return copyOut(r, r.Arg, v)
}

func releaseNeuronDS(r *Request, v *ioctl.NeuronDSInfo) Result {
	pid := v.PID
	if pid == 0 {
		pid = r.Caller.Tgid
	}
	d := r.Dev()
	d.mu.Lock()
	defer d.mu.Unlock()
	// Only the owner releases; anything else is silently ignored.
	if s := d.ds.findLocked(pid); s != nil && s.pid == r.Caller.Tgid {
		d.ds.releaseLocked(s)
	}
	return 0
}
