package device

import (
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/pod"
)

// The host's side of pod election: the election gets the devices' misc RAM
// and hears about whole-device resets and core unmarks, as the driver's
// npe_* hooks do.

// podRAM shows the devices' firmware registers to the election. Entries
// are set before each device's first reset is queued, so the election
// (which starts from a reset) always finds them.
type podRAM []*mmio.Firmware

func (r podRAM) ReadMisc(dev int, off uint32) uint32 {
	if dev < 0 || dev >= len(r) || r[dev] == nil {
		return 0
	}
	v, _ := r[dev].Read32(uint64(off))
	return v
}

func (r podRAM) WriteMisc(dev int, off uint32, v uint32) {
	if dev >= 0 && dev < len(r) && r[dev] != nil {
		r[dev].Set(uint64(off), v)
	}
}

// newPodElection returns the election of an UltraServer or PDS host, or nil.
func (s *System) newPodElection(cfg pod.Config) *pod.Election {
	switch {
	case s.Arch.Arch == dhal.V2:
		return nil
	case s.Instance.Platform == dhal.PlatformUltraServer:
		cfg.Kind = pod.KindUltraServer
	case s.Instance.Platform == dhal.PlatformPDS:
		cfg.Kind = pod.KindPDS
	default:
		return nil
	}
	// The driver's election always waits for 16 devices: with fewer it
	// never starts (POD_STATUS stays busy until a kill).
	cfg.Devices = pod.DefaultDevices
	cfg.ServerID = s.Instance.ServerID
	cfg.MarkedCores = s.cores.count
	cfg.Log = s.log
	return pod.New(cfg, s.podRAM)
}

// postReset is the driver's post-reset configuration, run after every
// whole-device reset.
func (s *System) postReset(d *Device, ok bool) {
	if s.pod != nil {
		s.pod.OnReset(d.Index, ok)
	}
}

// Pod returns the host's pod election (nil outside UltraServer and PDS).
func (s *System) Pod() *pod.Election { return s.pod }
