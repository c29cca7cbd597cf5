package device

import (
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/pod"
)

// Where the emulated driver pretends to have ioremapped each BAR0: a
// kernel virtual address in the vmalloc range, one stride per device.
// BAR_READ/BAR_WRITE take register addresses relative to it.
const (
	bar0KernelBase   = 0xffffc90010000000
	bar0KernelStride = 0x100000000
)

// BAR0KernelAddress returns the DEVICE_INFO bar_address[0] of the device.
func (d *Device) BAR0KernelAddress() uint64 {
	return bar0KernelBase + uint64(d.Index)*bar0KernelStride
}

func (s *System) basicInfo() ioctl.DeviceBasicInfo {
	return ioctl.DeviceBasicInfo{Architecture: uint32(s.Arch.Arch), Revision: s.Revision}
}

func deviceBasicInfo(r *Request) Result {
	v := r.Sys().basicInfo()
	return copyOut(r, r.Arg, &v)
}

func deviceInfo(r *Request) Result {
	d := r.Dev()
	nb := d.sys.Instance.Neighbours(d.Index)
	if len(nb) > len(ioctl.DeviceInfo{}.ConnectedDevices) {
		return Errno(syscall.EINVAL)
	}
	bi := d.sys.basicInfo()
	v := ioctl.DeviceInfo{
		Architecture:         bi.Architecture,
		Revision:             bi.Revision,
		ConnectedDeviceCount: uint32(len(nb)),
		BARAddress:           [2]uint64{d.BAR0KernelAddress(), 0},
		BARSize:              [2]uint64{d.sys.Arch.BAR0Size, 0},
	}
	copy(v.ConnectedDevices[:], nb)
	return copyOut(r, r.Arg, &v)
}

func pciAddress(s *System, index int) dhal.BDF { return s.Instance.BDFs[index] }

func deviceBDF(r *Request) Result {
	d := r.Dev()
	b := pciAddress(d.sys, d.Index)
	v := ioctl.DeviceBDF{BusNumber: b.Bus, Slot: b.Slot, Func: b.Func}
	return copyOut(r, r.Arg, &v)
}

// deviceBDFExt looks up a device relative to the fd's device.
func deviceBDFExt(r *Request, v *ioctl.DeviceBDFExt) Result {
	// The driver truncates the sum to u8. An index of 64 or more oopses
	// the real kernel (BUG_ON); here it is just a missing device.
	index := int(uint8(uint32(r.Dev().Index) + v.NDIndex))
	s := r.Sys()
	if s.Device(index) == nil {
		return Errno(syscall.EINVAL)
	}
	b := pciAddress(s, index)
	v.Domain, v.BusNumber, v.Slot, v.Func = b.Domain, b.Bus, b.Slot, b.Func
	return copyOut(r, r.Arg, v)
}

func compatibleVersion(r *Request) Result {
	s := r.Sys()
	c := s.Table.Compat[uint32(s.Arch.Arch)]
	v := ioctl.CompatibleVersion{Min: c[0], Max: c[1]}
	return copyOut(r, r.Arg, &v)
}

// driverInfo serves every command with _IOC_NR 110; the direction and size
// decide what happens.
func driverInfo(r *Request) Result {
	switch ioctl.Dir(r.Cmd) {
	case ioctl.DirWrite:
		return Errno(ioctl.ENOTSUPP)
	case ioctl.DirRead:
		if ioctl.Size(r.Cmd) >= uint32(ioctl.Sizeof[ioctl.DeviceDriverInfo]()) {
			bi := r.Sys().basicInfo()
			v := ioctl.DeviceDriverInfo{
				Architecture:  bi.Architecture,
				Revision:      bi.Revision,
				Version:       0,
				Size:          uint32(ioctl.Sizeof[ioctl.DeviceDriverInfo]()),
				FeatureFlags1: r.Sys().Table.FeaturesFor(uint32(r.Sys().Arch.Arch)),
			}
			return copyOut(r, r.Arg, &v)
		}
	}
	return Errno(syscall.EINVAL)
}

func hostDeviceID(r *Request) Result {
	v := ioctl.HostDeviceID{HostDeviceID: uint32(r.Dev().Index)}
	return copyOut(r, r.Arg, &v)
}

func hostDeviceIDToRIDMap(r *Request) Result {
	if ioctl.Size(r.Cmd) != uint32(ioctl.Sizeof[ioctl.HostDeviceIDToRIDMap]()) {
		return Errno(syscall.EINVAL)
	}
	s := r.Sys()
	var v ioctl.HostDeviceIDToRIDMap
	v.Count = uint32(len(s.Devices))
	copy(v.HostDIDToRIDMap[:], s.Instance.RIDMap())
	return copyOut(r, r.Arg, &v)
}

func logicalToPhysicalNCMap(r *Request) Result {
	s := r.Sys()
	if s.Arch.Arch == dhal.V2 {
		return Errno(ioctl.ENOTSUPP)
	}
	var v ioctl.GetLogicalToPhysicalNCMap
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
	// Version 1 (driver 2.29, V3) is the map without the UltraServer die
	// flip.
	v1 := v.MappingVersion == 1 && s.quirks.NCMapV1 && s.Arch.Arch == dhal.V3
	if v.MaxMapEntries > dhal.NCMapEntries || (v.MappingVersion != 0 && !v1) {
		return Errno(syscall.EINVAL)
	}
	// Header then max_map_entries {device_id, device_nc_idx} pairs, one
	// per (device, logical core) of the 16 x 8 table.
	cores := s.Arch.CoresPerDevice
	buf := make([]byte, 4+8*int(v.MaxMapEntries))
	put32(buf, uint32(v.MaxMapEntries))
	var row []uint32
	for i := 0; i < int(v.MaxMapEntries); i++ {
		dev, nc := i/cores, i%cores
		if nc == 0 {
			var err error
			if row, err = dhal.LogicalToPhysicalNC(s.Arch.Arch, dev, s.dieFlipped() && !v1); err != nil {
				return Errno(syscall.EINVAL)
			}
		}
		put32(buf[4+8*i:], uint32(dev))
		put32(buf[8+8*i:], row[nc])
	}
	return copyOutBytes(r, v.Map, buf)
}

// dieFlipped reports whether this host's NC map is die-flipped: UltraServer
// nodes 1 and 3 (in the current operating mode) of a formed pod.
func (s *System) dieFlipped() bool {
	if s.pod == nil || s.Instance.Platform != dhal.PlatformUltraServer {
		return false
	}
	state, node, _ := s.pod.Status()
	return state == pod.UserUltraServer && (node == 1 || node == 3)
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func deviceAppPID(r *Request) Result {
	d := r.Dev()
	d.mu.Lock()
	pid := d.procs[0].tgid
	d.mu.Unlock()
	return copyOut(r, r.Arg, &pid)
}

// Flags of DEVICE_GET_ALL_APPS_INFO.apps_info_flags.
const (
	appInfoNCLockInfo = 1 << 0
	appInfoMemUsage   = 1 << 1
)

func deviceGetAllAppsInfo(r *Request) Result {
	var hdr ioctl.GetAppsInfo
	if n := copyIn(r, r.Arg, &hdr); n != 0 {
		return n
	}
	var apps []ioctl.AppInfo
	d := r.Dev()
	d.mu.Lock()
	for _, slot := range d.procs {
		if uint32(len(apps)) >= hdr.Capacity {
			break
		}
		if slot.count == 0 {
			continue
		}
		app := ioctl.AppInfo{PID: slot.tgid}
		if hdr.AppsInfoFlags&appInfoNCLockInfo != 0 {
			app.NCLockMap, app.UUIDData = d.crwl.lockMapLocked(slot.tgid)
		}
		if hdr.AppsInfoFlags&appInfoMemUsage != 0 {
			app.HostMemSize, app.DeviceMemSize = d.mem.pool.PIDUsage(slot.tgid)
		}
		apps = append(apps, app)
	}
	d.mu.Unlock()
	hdr.Size = uint32(len(apps))
	out := append([]byte(nil), ioctl.Bytes(&hdr)...)
	for i := range apps {
		out = append(out, ioctl.Bytes(&apps[i])...)
	}
	return copyOutBytes(r, r.Arg, out)
}

// maxGlobalCores bounds NC_PID_STATE_DUMP's host-wide core index.
const maxGlobalCores = 512

func ncPIDStateDump(r *Request, v *ioctl.NCPIDStateDump) Result {
	if v.NCID >= maxGlobalCores {
		return Errno(syscall.ENOENT)
	}
	s := r.Sys()
	if s.Device(int(v.NCID)/s.Arch.CoresPerDevice) == nil {
		return Errno(syscall.EPERM) // the driver's -1
	}
	// Only a range-marked core has an owner to report. The driver also
	// dumps its per-device activity log to dmesg; that log is not kept.
	if owner := s.cores.owner(v.NCID); owner != 0 {
		s.log.WithFields(logrus.Fields{"core": v.NCID, "owner": owner, "requested_by": r.Caller.Tgid}).Warn("NC_PID_STATE_DUMP: core owner")
	}
	return 0
}

// maxPrintk is the driver's stack buffer for PRINTK.
const maxPrintk = 512

func printk(r *Request, v *ioctl.Printk) Result {
	if v.Size > maxPrintk {
		return Errno(syscall.EFAULT)
	}
	if v.Size == 0 {
		// The driver reads the byte before its buffer here (undefined); a
		// message without its NUL is what it would most likely conclude.
		return Errno(syscall.EBADMSG)
	}
	buf := make([]byte, v.Size)
	if res := r.readUser(buf, v.Buffer); res != 0 {
		return res
	}
	if buf[len(buf)-1] != 0 {
		return Errno(syscall.EBADMSG)
	}
	r.Sys().log.WithFields(logrus.Fields{"tgid": r.Caller.Tgid, "device": r.Dev().Index}).Error(string(buf[:len(buf)-1]))
	return 0
}

// metricsCtl is the driver-global metrics posting mode.
type metricsCtl struct{ paused bool }

func metricsCtrl(r *Request, v *ioctl.MetricsCtrl) Result {
	s := r.Sys()
	// 0 resumes and 1 pauses periodic metric posting; other values are ignored.
	switch v.Mode {
	case 0, 1:
		s.mu.Lock()
		s.metrics.paused = v.Mode == 1
		s.mu.Unlock()
	}
	return 0
}
