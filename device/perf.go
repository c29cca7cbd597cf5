package device

import (
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Driver 2.27.4.0's firmware features: throttling notifications and the
// performance-profile queries, all over the register protocol.

// throttlingNotifications serves THROTTLING_NOTIFICATIONS: SET_FEATURE
// with bit 0 set or clear, on every architecture.
func throttlingNotifications(r *Request, v *ioctl.ThrottlingNotifications) Result {
	var bits byte
	if v.Enable != 0 {
		bits = mmio.FeatureThrottlingNotifier
	}
	_, err := r.Dev().fwc.Register(mmio.CmdSetFeature, []byte{bits})
	return r.Sys().registerResult(err)
}

// getPerformanceProfile serves GET_PERFORMANCE_PROFILE: the firmware's
// current profile (always 0 on V2, which has none).
func getPerformanceProfile(r *Request) Result {
	v, res := readPowerProfile(r, powerProfileGet)
	if res != 0 {
		return res
	}
	d := r.Dev()
	v.Profile = 0
	if d.sys.Arch.Arch != dhal.V2 {
		answer, err := d.fwc.Register(mmio.CmdGetData, []byte{mmio.GetDataPerfProfile})
		if res := d.sys.registerResult(err); res != 0 {
			return res
		}
		if len(answer) > 4 {
			v.Profile = uint32(answer[4])
		}
	}
	return copyOut(r, r.Arg, &v)
}

// availablePerfProfiles serves AVAILABLE_PERF_PROFILES: the firmware's
// profiles for a feature (0 all) as a count and a 256-bit map. V2 has no
// profiles and leaves the caller's map as it was.
func availablePerfProfiles(r *Request, v *ioctl.AvailablePerfProfiles) Result {
	d := r.Dev()
	v.NumProfiles = 0
	if d.sys.Arch.Arch != dhal.V2 {
		req := []byte{mmio.GetDataAvailableProfiles, byte(v.RequestedFeature), byte(v.RequestedFeature >> 8)}
		answer, err := d.fwc.Register(mmio.CmdGetData, req)
		if res := d.sys.registerResult(err); res != 0 {
			return res
		}
		v.Bitmap = [32]uint8{}
		if len(answer) > 0 {
			v.NumProfiles = answer[0]
			copy(v.Bitmap[:], answer[1:])
		}
	}
	return copyOut(r, r.Arg, v)
}
