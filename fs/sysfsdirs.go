package fs

import "github.com/neuronfs/neuronfs/device"

// SysfsDir is one directory of the driver's sysfs attributes and links,
// Path relative to the tree's root (ClassDir, DevicesDir/neuronN...).
type SysfsDir struct {
	Path  string
	Attrs []device.Attr
	Links []device.Link
}

// SysfsDirs lists the directories of sys's sysfs tree (and the control
// directory), as the FUSE tree serves them and run's filter host view
// shadows them.
func SysfsDirs(sys *device.System) []SysfsDir {
	sf := sys.Sysfs()
	dirs := []SysfsDir{{ClassDir, sf.ClassAttributes(), sf.ClassLinks()}}
	for _, d := range sys.Devices {
		dirs = append(dirs, SysfsDir{DevicesDir + "/" + d.Name(), d.Attributes(), d.Links()})
	}
	for _, d := range sys.Devices {
		dirs = append(dirs, SysfsDir{PCIRoot + "/" + d.PCIPath(), d.PCIAttributes(), d.PCILinks()})
	}
	return append(dirs,
		SysfsDir{PCIBusDevicesDir, nil, sf.PCIBusLinks()},
		SysfsDir{PCIDriverDir, sf.PCIDriverAttributes(), sf.PCIDriverLinks()},
		SysfsDir{ModuleDir, sf.ModuleAttributes(), sf.ModuleLinks()},
		SysfsDir{DMIDir, sf.DMIAttributes(), nil},
		SysfsDir{ControlDir, sf.ControlAttributes(), nil},
	)
}
