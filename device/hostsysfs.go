package device

import "syscall"

// Sysfs is the host-wide part of the emulated sysfs and neuronfs's own
// control files: the module's, the class's, the PCI driver's and bus's,
// DMI's and the control directory's attribute sets and links, each built
// from the System's state when the tree is made. The devices' own
// directories are Device's (sysfs.go, pci.go, metrics.go).
type Sysfs struct{ s *System }

// Sysfs returns the host-wide attribute sets.
func (s *System) Sysfs() Sysfs { return Sysfs{s} }

// ModuleAttributes returns the files of /sys/module/neuron that programs
// read: the version (libnrt requires major >= 2) and the load state.
func (fs Sysfs) ModuleAttributes() []Attr {
	s := fs.s
	return []Attr{
		{Path: "version", Mode: 0o444, Show: func() string { return s.Table.Version.String() + "\n" }},
		{Path: "initstate", Mode: 0o444, Show: func() string { return "live\n" }},
	}
}

// ClassLinks returns the class directory's device links.
func (fs Sysfs) ClassLinks() []Link {
	s := fs.s
	var out []Link
	for _, d := range s.Devices {
		out = append(out, Link{Path: d.Name(), Target: "../../devices/virtual/neuron_device/" + d.Name()})
	}
	return out
}

// PCIDriverAttributes returns the files of the PCI driver's directory:
// the control files of every PCI driver. The emulated functions stay
// bound: binding, unbinding and id changes are refused.
func (fs Sysfs) PCIDriverAttributes() []Attr {
	refuse := func([]byte) syscall.Errno { return syscall.EPERM }
	attrs := []Attr{{Path: "uevent", Mode: 0o200, Store: func([]byte) syscall.Errno { return 0 }}}
	for _, name := range []string{"bind", "unbind", "new_id", "remove_id"} {
		attrs = append(attrs, Attr{Path: name, Mode: 0o200, Store: refuse})
	}
	return attrs
}

// PCIDriverLinks returns the driver directory's links: each bound
// function, and the module.
func (fs Sysfs) PCIDriverLinks() []Link {
	s := fs.s
	out := []Link{{Path: "module", Target: "../../../../module/neuron"}}
	for _, d := range s.Devices {
		out = append(out, Link{Path: d.PCISlot(), Target: "../../../../devices/" + d.PCIPath()})
	}
	return out
}

// ModuleLinks returns /sys/module/neuron's links: the module's PCI
// driver, as the kernel links every driver a module registers.
func (fs Sysfs) ModuleLinks() []Link {
	return []Link{{Path: "drivers/pci:" + PCIDriverName, Target: "../../../bus/pci/drivers/" + PCIDriverName}}
}

// PCIBusLinks returns /sys/bus/pci/devices's links to the functions.
func (fs Sysfs) PCIBusLinks() []Link {
	s := fs.s
	var out []Link
	for _, d := range s.Devices {
		out = append(out, Link{Path: d.PCISlot(), Target: "../../../devices/" + d.PCIPath()})
	}
	return out
}

// topologyMode is the mode of core_count and connected_devices: owner
// read, world-readable from driver 2.28.
func (fs Sysfs) topologyMode() uint32 {
	s := fs.s
	if s.quirks.FWBuildAttr {
		return modeClassAttr
	}
	return modeOwnerRead
}
