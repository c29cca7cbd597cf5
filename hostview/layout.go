// Package hostview builds what a command sees of an emulated host inside
// its private mount namespace (character nodes in /dev, the driver's sysfs,
// PCI functions, /proc/devices, DMI, the control directory) from a mounted
// neuronfs tree, and launches the command under the seccomp filter whose
// supervisor answers opens of the nodes. `neuronfs run` and the testbed
// package both build their hosts with it.
package hostview

import (
	"github.com/neuronfs/neuronfs/device"
)

// Layout is what the view needs to know of the emulated host. The daemon
// computes it (LayoutOf); a launcher in another process receives it as
// JSON, so it is plain data.
type Layout struct {
	Major    uint32   `json:"major"`
	Devices  []string `json:"devices"`   // node names, by index
	PCIPaths []string `json:"pci_paths"` // each device's function, pciDDDD:BB/DDDD:BB:SS.F
	BusLinks []Link   `json:"bus_links"` // /sys/bus/pci/devices entries
}

// Link is one symlink: Path, relative to its directory, points at Target.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// LayoutOf describes sys.
func LayoutOf(sys *device.System) Layout {
	l := Layout{Major: sys.Major}
	for _, d := range sys.Devices {
		l.Devices = append(l.Devices, d.Name())
		l.PCIPaths = append(l.PCIPaths, d.PCIPath())
	}
	for _, k := range sys.Sysfs().PCIBusLinks() {
		l.BusLinks = append(l.BusLinks, Link{Path: k.Path, Target: k.Target})
	}
	return l
}

// ControlEnv names the environment variable that tells a command where
// the control directory (docs/control.md) is; ControlPath is where the
// view puts it. A dot name, so that no glob of /dev/neuron* finds it.
const (
	ControlEnv  = "NEURONFS_CONTROL"
	ControlPath = "/dev/.neuronfs-control"
)
