package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// getVAPlacement serves GET_VA_PLACEMENT (2.27.4.0): the device and HBM
// that the memory the caller mapped at va is on. It does not depend on
// the fd it comes through. Whatever happens, the struct is written back
// (va unchanged, -1 for both indexes on failure), and a failed write is
// ignored, as the driver does.
func getVAPlacement(r *Request, v *ioctl.GetVAPlacement) Result {
	res := Result(0)
	dev, hbm, ok := r.vaPlacement(v.VA)
	if !ok {
		dev, hbm, res = -1, -1, Errno(syscall.ENXIO)
	}
	v.DeviceIndex, v.HBMIndex = dev, hbm
	copyOut(r, r.Arg, v)
	return res
}

// vaPlacement finds the caller's mapping holding va. The driver records
// a device address only for mappings of whole device-memory chunks made
// by a process attached to that device (host chunks, special resources
// and raw root mappings record none), and takes the HBM whose usable
// range (past the carve-out) holds the chunk.
func (r *Request) vaPlacement(va uint64) (dev, hbm int32, ok bool) {
	if r.Maps == nil {
		return 0, 0, false
	}
	m, found := r.Maps.MappingAt(r.Caller.Tgid, va)
	devs := r.Sys().Devices
	if !found || m.Device < 0 || m.Device >= len(devs) {
		return 0, 0, false
	}
	d := devs[m.Device]
	if !d.IsAttached(r.Caller.Tgid) {
		return 0, 0, false
	}
	c, found := d.mem.pool.Containing(m.Offset)
	if !found || c.Loc != mempool.LocDevice || !chunkMapsAs(c, m.Length) {
		return 0, 0, false
	}
	a := d.sys.Arch
	for ch := range a.HBMChannels {
		if c.PA >= a.HBMBases[ch]+mempool.CarveoutSize && c.PA < a.HBMBases[ch]+a.HBMSize {
			return int32(m.Device), int32(ch), true
		}
	}
	return 0, 0, false
}
