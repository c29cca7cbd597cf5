package device

import (
	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
)

// chipHost is what a device's chip reaches of the driver (chip.Driver):
// memory admission and accounting, allocations, the queues the runtime
// left to the device, the neighbours, the fault switches and the sysfs
// counters. The chip calls it holding none of its locks.
type chipHost struct {
	d          *Device
	neighbours []uint32 // DEVICE_INFO connected_devices, by link
}

func newChipHost(d *Device) *chipHost {
	return &chipHost{d: d, neighbours: d.sys.Instance.Neighbours(d.Index)}
}

func (h *chipHost) Admit(pa, n uint64) bool { return h.d.sys.admitWrite(h.d, pa, n, 0) }
func (h *chipHost) Touched(n uint64)        { h.d.sys.noteAccess(n) }

func (h *chipHost) Allocation(pa uint64) (base, size uint64, ok bool) {
	if c, ok := h.d.mem.pool.Containing(pa); ok {
		return c.PA, c.Size, true
	}
	return 0, 0, false
}

// DeviceDrivenQueues lists core nc's queues a process initialised and
// never rang with DMA_QUEUE_COPY_START (the exec queues).
func (h *chipHost) DeviceDrivenQueues(nc int) [][2]int {
	d := h.d
	first, end := d.chip.Core(nc).Engines()
	var out [][2]int
	d.mu.Lock()
	defer d.mu.Unlock()
	for key := range d.dma.owner {
		if key[0] >= first && key[0] < end && !d.dma.hostDriven[key] {
			out = append(out, key)
		}
	}
	return out
}

// Peer follows DEVICE_INFO's connected_devices. Devices are all built
// before a process can open one.
func (h *chipHost) Peer(link int) *chip.Chip {
	if link < 0 || link >= len(h.neighbours) {
		return nil
	}
	if p := h.d.sys.Device(int(h.neighbours[link])); p != nil {
		return p.chip
	}
	return nil
}

func (h *chipHost) HostOwner(pa uint64) *chip.Chip {
	s := h.d.sys
	if o, ok := s.hostSpace.Owner(pa - s.Arch.HostBase); ok {
		if other, ok := o.(*Device); ok {
			return other.chip
		}
	}
	return nil
}

func (h *chipHost) Count(nc int, name string, n uint64) { h.d.metrics.Add(nc, name, n) }

func (h *chipHost) Faults() chip.Faults {
	f := &h.d.sys.faults
	return chip.Faults{DMA: f.dma, ResetFail: f.ResetFail.Load, FWIOFail: f.FWIOFail.Load, PowerInvalid: f.PowerInvalid.Load}
}

// chipConfig is device index's chip as the system configures it.
func (s *System) chipConfig(index int) chip.Config {
	serial := s.id.serial(index)
	p := s.Instance.Product
	id := map[uint64]uint32{
		mmio.RegDeviceID: s.Instance.RoutingID(index),
		mmio.RegSerialLo: uint32(serial),
		mmio.RegSerialHi: uint32(serial >> 32),
	}
	if s.Instance.Platform == dhal.PlatformPDS {
		// The firmware's server info: valid bit and server id.
		id[mmio.RegServerRack] = 1<<15 | s.Instance.ServerID&0x7fff
	}
	return chip.Config{
		Name: deviceName(index), Arch: s.Arch, Backing: s.backing,
		Log: s.log.WithField("device", index), Epoch: s.epoch,
		InferenceStart: s.inferenceStart, ExecLatency: s.execLatency, ResetLatency: s.resetLatency, HangEnd: s.hangEnd,
		Identity: id, Trace: s.traceDevice(index),
		PCI: chip.PCIFunction{
			Vendor: p.PCIVendor, Device: p.PCIDevice, SubVendor: dhal.PCISubsystemVendor, SubDevice: dhal.PCISubsystemDevice,
			Class: dhal.PCIClass, Revision: uint8(s.Revision), BARs: s.Arch.PCIBARs(index), BAR0Size: s.Arch.BAR0Size, Link: p.PCIeLink(),
		},
	}
}
