package runtime

import (
	"fmt"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Device is an open normal fd of one device: it attaches the process.
type Device struct {
	Index int
	fd    int
	// Read once and kept; a Device may be shared between goroutines.
	bar0 atomic.Uint64                  // DEVICE_INFO's bar_address[0]
	arch atomic.Pointer[dhal.ArchFacts] // from DEVICE_BASIC_INFO
}

// Open opens /dev/neuronN read-write.
func (h Host) Open(index int) (*Device, error) {
	fd, err := unix.Open(h.path(fmt.Sprintf("dev/neuron%d", index)), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open neuron%d: %w", index, err)
	}
	return &Device{Index: index, fd: fd}, nil
}

// Close closes the fd; the driver detaches the process at its last one.
func (d *Device) Close() error { return unix.Close(d.fd) }

// Fd returns the file descriptor, for mmap.
func (d *Device) Fd() int { return d.fd }

// Misc is the free-access (O_WRONLY) fd the vendor library keeps once per
// process: it reaches only the misc lane and never attaches.
type Misc struct {
	Index int
	fd    int
}

// OpenMisc opens /dev/neuronN write-only.
func (h Host) OpenMisc(index int) (*Misc, error) {
	fd, err := unix.Open(h.path(fmt.Sprintf("dev/neuron%d", index)), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open neuron%d write-only: %w", index, err)
	}
	return &Misc{Index: index, fd: fd}, nil
}

// Close closes the fd; the driver then frees every core the process marked.
func (m *Misc) Close() error { return unix.Close(m.fd) }

// do issues one command on fd and turns the driver's answer into an error.
func do[T any](fd int, name string, cmd uint32, arg *T) error {
	r, e := sysIoctl(fd, cmd, arg)
	if e != 0 {
		return &Error{Cmd: name, Errno: e}
	}
	if r > 0 {
		return &Error{Cmd: name, NotCopied: r}
	}
	return nil
}

// BasicInfo is DEVICE_BASIC_INFO: architecture and PCI revision. The
// device keeps the architecture's facts for the calls that need them.
func (d *Device) BasicInfo() (ioctl.DeviceBasicInfo, error) {
	var v ioctl.DeviceBasicInfo
	if err := do(d.fd, "DEVICE_BASIC_INFO", ioctl.CmdDeviceBasicInfo, &v); err != nil {
		return v, err
	}
	if f, err := dhal.Facts(dhal.Arch(v.Architecture)); err == nil {
		d.arch.Store(f)
	}
	return v, nil
}

// Info is DEVICE_INFO: architecture, neighbours and BAR0.
func (d *Device) Info() (ioctl.DeviceInfo, error) {
	var v ioctl.DeviceInfo
	return v, do(d.fd, "DEVICE_INFO", ioctl.CmdDeviceInfo, &v)
}

// ConnectedDevices returns the neighbour device indices.
func (d *Device) ConnectedDevices() ([]uint32, error) {
	v, err := d.Info()
	if err != nil {
		return nil, err
	}
	n := min(int(v.ConnectedDeviceCount), len(v.ConnectedDevices))
	return append([]uint32{}, v.ConnectedDevices[:n]...), nil
}

// PCIAddress returns the device's PCI domain:bus:slot.func (DEVICE_BDF_EXT).
func (d *Device) PCIAddress() (string, error) {
	v := ioctl.DeviceBDFExt{}
	if err := do(d.fd, "DEVICE_BDF_EXT", ioctl.CmdDeviceBDFExt, &v); err != nil {
		return "", err
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v.Domain, v.BusNumber, v.Slot, v.Func), nil
}

// HostDeviceID is HOST_DEVICE_ID: the device's index on this host.
func (d *Device) HostDeviceID() (uint32, error) {
	var v ioctl.HostDeviceID
	return v.HostDeviceID, do(d.fd, "HOST_DEVICE_ID", ioctl.CmdHostDeviceID, &v)
}

// CompatibleVersion returns the runtime API range the driver accepts.
func (d *Device) CompatibleVersion() (minVersion, maxVersion uint32, err error) {
	var v ioctl.CompatibleVersion
	err = do(d.fd, "COMPATIBLE_VERSION", ioctl.CmdCompatibleVersion, &v)
	return v.Min, v.Max, err
}

// DriverInfo is DRIVER_INFO_GET: architecture, revision and feature bits.
func (d *Device) DriverInfo() (ioctl.DeviceDriverInfo, error) {
	var v ioctl.DeviceDriverInfo
	return v, do(d.fd, "DRIVER_INFO_GET", ioctl.CmdDriverInfoGet, &v)
}

// Flags of Apps.
const (
	AppsLockInfo = 1 << 0 // report the cores each process holds the model lock of
	AppsMemUsage = 1 << 1 // report host and device memory in use
)

// Apps lists the processes attached to the device (DEVICE_GET_ALL_APPS_INFO).
func (d *Device) Apps(flags uint16) ([]ioctl.AppInfo, error) {
	const max = 16
	var buf struct {
		hdr  ioctl.GetAppsInfo
		apps [max]ioctl.AppInfo
	}
	buf.hdr = ioctl.GetAppsInfo{AppsInfoFlags: flags, Capacity: max}
	if err := do(d.fd, "DEVICE_GET_ALL_APPS_INFO", ioctl.CmdDeviceGetAllAppsInfo, &buf); err != nil {
		return nil, err
	}
	n := min(int(buf.hdr.Size), max)
	return append([]ioctl.AppInfo{}, buf.apps[:n]...), nil
}

// MarkCores reserves count consecutive cores in [first, last] (device
// relative) for this process and returns their bitmap.
func (m *Misc) MarkCores(count, first, last uint32) (uint64, error) {
	v := ioctl.CRWLNCMap{NCCount: count, StartNCIndex: first, EndNCIndex: last}
	err := do(m.fd, "CRWL_NC_RANGE_MARK", ioctl.CmdCRWLNCRangeMark, &v)
	return v.Bitmap, err
}

// UnmarkCores releases the cores in bitmap that this process marked.
func (m *Misc) UnmarkCores(bitmap uint64) error {
	v := ioctl.CRWLNCMap{Bitmap: bitmap}
	return do(m.fd, "CRWL_NC_RANGE_UNMARK", ioctl.CmdCRWLNCRangeUnmark, &v)
}

// Reset resets the cores in ncMap (0xffffffff: the whole device) and waits
// for the outcome (NC_RESET, then NC_RESET_READY).
func (d *Device) Reset(ncMap uint32) error {
	v := ioctl.DeviceReset{NCMap: ncMap}
	if err := do(d.fd, "NC_RESET", ioctl.CmdNCReset, &v); err != nil {
		return err
	}
	ready := ioctl.DeviceReady{RequestID: v.RequestID}
	if err := do(d.fd, "NC_RESET_READY", ioctl.CmdNCResetReady, &ready); err != nil {
		return err
	}
	if ready.Result != 0 {
		return &Error{Cmd: "NC_RESET_READY", Errno: resetErrno(ready.Result)}
	}
	return nil
}

// resetErrno maps NC_RESET_READY's result: 1 failed, -4 interrupted.
func resetErrno(result int32) syscall.Errno {
	if result < 0 {
		return syscall.Errno(-result)
	}
	return syscall.EIO
}

// Datastore is one process's counter area on a device, shared with
// monitors (ACQUIRE_NEURON_DS).
type Datastore struct {
	Offset uint64 // mmap offset
	Size   uint64
}

// AcquireDatastore returns this process's datastore (pid 0) or, for a
// monitor, that of process pid.
func (d *Device) AcquireDatastore(pid int32) (Datastore, error) {
	v := ioctl.NeuronDSInfo{PID: pid}
	err := do(d.fd, "ACQUIRE_NEURON_DS", ioctl.CmdAcquireNeuronDS, &v)
	return Datastore{Offset: v.MmapOffset, Size: uint64(v.Size)}, err
}

// ReleaseDatastore gives this process's datastore back; the driver adds
// its counters to the sysfs metrics.
func (d *Device) ReleaseDatastore() error {
	var v ioctl.NeuronDSInfo
	return do(d.fd, "RELEASE_NEURON_DS", ioctl.CmdReleaseNeuronDS, &v)
}

// MapDatastore maps a datastore read-write.
func (d *Device) MapDatastore(ds Datastore) ([]byte, error) {
	return unix.Mmap(d.fd, int64(ds.Offset), int(ds.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}
