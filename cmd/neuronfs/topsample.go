package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/neuronfs/neuronfs/runtime"
)

// A top sample: the driver's sysfs counters of every device and core at
// one instant, read through runtime.Host only, so it works on real
// hardware too. Counter sets are listed from the directories rather than
// hard-coded, since they differ between driver versions.

type topSample struct {
	at      time.Time
	devices []topDevice
}

type topDevice struct {
	index   int
	name    string            // info/architecture/device_name
	hostMem map[string]uint64 // stats/memory_usage/host_mem/<category>/total
	power   string            // stats/power/utilization
	cores   []topCore
	err     error // the device could not be read
	// held is what an emulator's backing holds of the device (nil on a
	// real host).
	held *runtime.DeviceMemory
	// blocked are its cores whose staged program hangs (an emulator's
	// neuronfs/cores; none on a real host).
	blocked []runtime.BlockedCore
	// notEmulated are its cores whose engines only counted some records:
	// their results were not computed (an emulator's neuronfs/cores).
	notEmulated []runtime.NotEmulatedCore
}

type topCore struct {
	index   int
	other   map[string]uint64 // stats/other_info/<counter>/total
	status  map[string]uint64 // stats/status/<counter>/total
	devMem  map[string]uint64 // stats/memory_usage/device_mem/<category>/total
	memDev  uint64            // stats/memory_usage/device_mem/total
	memHost uint64            // stats/memory_usage/host_mem/total
}

// takeSample reads every device, one goroutine per device.
func takeSample(h runtime.Host) (topSample, error) {
	indices, err := h.DeviceIndices()
	if err != nil {
		return topSample{}, err
	}
	if len(indices) == 0 {
		return topSample{}, fmt.Errorf("no neuron devices under %s", h.Root)
	}
	s := topSample{at: time.Now(), devices: make([]topDevice, len(indices))}
	var wg sync.WaitGroup
	for k, i := range indices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.devices[k] = sampleDevice(h, i)
		}()
	}
	wg.Wait()
	if emu, err := h.EmulatorMemory(); err == nil {
		for k := range s.devices {
			if m, ok := emu.Devices[s.devices[k].index]; ok {
				s.devices[k].held = &m
			}
		}
	}
	if blocked, err := h.EmulatorBlocked(); err == nil {
		for _, b := range blocked {
			if d := s.device(b.Device); d != nil {
				d.blocked = append(d.blocked, b)
			}
		}
	}
	if skipped, err := h.EmulatorNotEmulated(); err == nil {
		for _, c := range skipped {
			if d := s.device(c.Device); d != nil {
				d.notEmulated = append(d.notEmulated, c)
			}
		}
	}
	return s, nil
}

func sampleDevice(h runtime.Host, i int) topDevice {
	d := topDevice{index: i}
	d.name, _ = h.SysfsDevice(i, "info/architecture/device_name")
	d.hostMem = counterDir(h, i, "stats/memory_usage/host_mem")
	d.power, _ = h.SysfsDevice(i, "stats/power/utilization")
	cores, err := h.Cores(i)
	if err != nil {
		d.err = err
		return d
	}
	for _, c := range cores {
		base := fmt.Sprintf("neuron_core%d/stats/", c)
		tc := topCore{
			index:  c,
			other:  counterDir(h, i, base+"other_info"),
			status: counterDir(h, i, base+"status"),
			devMem: counterDir(h, i, base+"memory_usage/device_mem"),
		}
		tc.memDev, _ = h.SysfsCounter(i, base+"memory_usage/device_mem/total")
		tc.memHost, _ = h.SysfsCounter(i, base+"memory_usage/host_mem/total")
		d.cores = append(d.cores, tc)
	}
	return d
}

// counterDir reads the total of every counter directory below dir;
// unreadable counters are left out.
func counterDir(h runtime.Host, i int, dir string) map[string]uint64 {
	names, _ := h.SysfsDir(i, dir)
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		if v, err := h.SysfsCounter(i, dir+"/"+n+"/total"); err == nil {
			out[n] = v
		}
	}
	return out
}
