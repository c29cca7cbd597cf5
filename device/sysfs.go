package device

import (
	"fmt"
	"strings"
	"syscall"
)

// Attr is one sysfs attribute file. Show renders the whole file; Store, if
// set, takes a write. A file whose show fails in the kernel has ReadErr
// (the open succeeds, every read fails with it).
type Attr struct {
	Path    string // relative to its directory, e.g. "info/serial_number"
	Mode    uint32
	Show    func() string
	Store   func(data []byte) syscall.Errno
	ReadErr syscall.Errno
	// Size is what stat reports for a binary attribute (PCI config);
	// 0 for a text attribute, which reports a page.
	Size uint64
	// UnprivilegedLen, if set, is how much of the content an opener
	// without CAP_SYS_ADMIN reads (the PCI config's standard header).
	UnprivilegedLen int
}

// Link is a sysfs symlink.
type Link struct {
	Path   string
	Target string
}

// Modes the driver gives its attributes.
const (
	modeClassAttr  = 0o444 // class attributes
	modeResetAttr  = 0o600 // S_IRUSR|S_IWUSR
	modeOwnerRead  = 0o400 // core_count, connected_devices
	modeMetricAttr = 0o644 // everything under the metrics tree
)

// Name returns the device node name, neuronN.
func (d *Device) Name() string { return deviceName(d.Index) }

func deviceName(index int) string { return fmt.Sprintf("neuron%d", index) }

// Links returns the symlinks inside the device's sysfs directory.
func (d *Device) Links() []Link {
	return []Link{{Path: "subsystem", Target: "../../../../class/neuron_device"}}
}

// Attributes returns the device's sysfs files (paths relative to
// /sys/devices/virtual/neuron_device/neuronN).
func (d *Device) Attributes() []Attr {
	s := d.sys
	p := s.Instance.Product
	text := func(v string) func() string { return func() string { return v } }
	attrs := []Attr{
		{Path: "dev", Mode: 0o444, Show: text(fmt.Sprintf("%d:%d\n", s.Major, d.Index))},
		{Path: "uevent", Mode: 0o644, Show: text(fmt.Sprintf("MAJOR=%d\nMINOR=%d\nDEVNAME=%s\n", s.Major, d.Index, d.Name())),
			Store: func([]byte) syscall.Errno { return 0 }},
		{Path: "reset", Mode: modeResetAttr, Show: func() string { return fmt.Sprintf("%d\n", d.State()) }, Store: d.storeReset},
		{Path: "core_count", Mode: s.Sysfs().topologyMode(), Show: text(fmt.Sprintf("%d", s.Arch.CoresPerDevice))},
		{Path: "connected_devices", Mode: s.Sysfs().topologyMode(), Show: func() string { return connectedDevices(s.Instance.Neighbours(d.Index)) }},
		{Path: "info/notify_delay", Mode: modeMetricAttr, Show: s.Sysfs().showNotifyDelay, Store: s.Sysfs().storeNotifyDelay},
		{Path: "info/serial_number", Mode: modeMetricAttr, Show: text(fmt.Sprintf("%016x\n", s.id.serial(d.Index))), Store: ignoreWrite},
		{Path: "info/architecture/arch_type", Mode: modeMetricAttr, Show: text(p.NDArchType + "\n"), Store: ignoreWrite},
		{Path: "info/architecture/instance_type", Mode: modeMetricAttr, Show: text(p.InstanceType + "\n"), Store: ignoreWrite},
		{Path: "info/architecture/device_name", Mode: modeMetricAttr, Show: text(p.DeviceName + "\n"), Store: ignoreWrite},
	}
	for c := 0; c < s.Arch.CoresPerDevice; c++ {
		if s.Arch.ActiveCoreMap&(1<<c) == 0 {
			continue
		}
		attrs = append(attrs, Attr{Path: fmt.Sprintf("neuron_core%d/info/architecture/arch_type", c), Mode: modeMetricAttr, Show: text(p.NCArchType + "\n"), Store: ignoreWrite})
	}
	attrs = append(attrs, d.classPM.attributes("power")...)
	return append(attrs, d.metricAttributes()...)
}

// connectedDevicesMax is the driver's buffer for connected_devices: a
// longer list prints nothing at all.
const connectedDevicesMax = 20

func connectedDevices(nb []uint32) string {
	if len(nb) == 0 {
		return "\n"
	}
	parts := make([]string, len(nb))
	for i, n := range nb {
		parts[i] = fmt.Sprint(n)
	}
	out := strings.Join(parts, ", ") + "\n"
	if len(out) >= connectedDevicesMax {
		return ""
	}
	return out
}

// storeReset: any write starts a full-device reset when nobody has the
// node open, and is ignored otherwise.
func (d *Device) storeReset([]byte) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.openCount == 0 {
		d.reset.startLocked(ncMapDevice, resetRequestAll)
	}
	return 0
}

// showNotifyDelay renders info/notify_delay, a host-wide switch every
// device shows.
func (fs Sysfs) showNotifyDelay() string {
	s := fs.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notifyDelay {
		return "0\n"
	}
	return "-1\n"
}

func (fs Sysfs) storeNotifyDelay(data []byte) syscall.Errno {
	s := fs.s
	v := strings.TrimSpace(string(data))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch v {
	case "0":
		s.notifyDelay = true
	case "-1":
		s.notifyDelay = false
	default:
		// The driver logs and ignores anything else, and the write succeeds.
		s.log.WithField("value", v).Warn("invalid notify_delay ignored")
	}
	return 0
}

// ignoreWrite is the store of metric files that show a reading (arch
// strings, serial number, hardware counters): they are 0644 and a write
// succeeds without effect, as in the driver.
func ignoreWrite([]byte) syscall.Errno { return 0 }
