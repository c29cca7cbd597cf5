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

type datastoreSlot struct {
	pid       int32
	clearTick uint64
	chunk     *mempool.Chunk
}

// initDatastore allocates the slots at probe.
func (d *Device) initDatastore() error {
	for i := range d.ds {
		c, err := d.pool.Alloc(mempool.AllocRequest{Size: datastoreSize, Host: true, MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
		if err != nil {
			return err
		}
		d.ds[i].chunk = c
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

// releaseSlotLocked aggregates a slot into the metrics and clears it.
func (d *Device) releaseSlotLocked(s *datastoreSlot) {
	c := s.chunk
	if mem, done, res := d.chunkView(c, 0, datastoreSize); res == 0 {
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
	d.clearSlotLocked(s)
}

// clearSlotLocked frees a slot for reuse and zeroes its memory.
func (d *Device) clearSlotLocked(s *datastoreSlot) {
	d.sys.mu.Lock()
	d.sys.dsClearTick++
	s.clearTick = d.sys.dsClearTick
	d.sys.mu.Unlock()
	s.pid = 0
	d.chip.Punch(s.chunk.PA, s.chunk.Size) // reads back as zeros
}

func (d *Device) findSlotLocked(pid int32) *datastoreSlot {
	for i := range d.ds {
		if d.ds[i].pid == pid {
			return &d.ds[i]
		}
	}
	return nil
}

// freeSlotLocked picks a slot never used, else the one released longest ago.
func (d *Device) freeSlotLocked() *datastoreSlot {
	var best *datastoreSlot
	for i := range d.ds {
		s := &d.ds[i]
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
		if s = d.findSlotLocked(v.PID); s == nil {
			d.mu.Unlock()
			return Errno(syscall.ENOENT)
		}
	} else if s = d.findSlotLocked(r.Caller.Tgid); s == nil {
		if s = d.freeSlotLocked(); s == nil {
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
	if s := d.findSlotLocked(pid); s != nil && s.pid == r.Caller.Tgid {
		d.releaseSlotLocked(s)
	}
	return 0
}
