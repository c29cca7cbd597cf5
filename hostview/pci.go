package hostview

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/ns"
)

// addPCIFunctions shows each device as a PCI function bound to the
// driver, beside the host's functions: its directory under
// /sys/devices/pciDDDD:BB (inside the host's root-bus directory when the
// host has that bus, else as a root bus of its own), its link in
// /sys/bus/pci/devices and the driver's directory in /sys/bus/pci/drivers.
// A host function at the same address is hidden behind the emulated one.
// It must run before /sys/devices/virtual is covered, since covering
// /sys/devices binds its entries back.
func addPCIFunctions(l Layout, src string) error {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		// No PCI bus on this host (some VMs and containers): sysfs
		// cannot grow the directories, so there is nothing to add to.
		return nil
	}
	funcs := map[string][]string{} // root bus -> its functions
	var slots []string
	for _, p := range l.PCIPaths {
		root, fn, _ := strings.Cut(p, "/")
		funcs[root] = append(funcs[root], fn)
		slots = append(slots, fn)
	}
	roots := make([]string, 0, len(funcs))
	var newRoots []string
	for root := range funcs {
		roots = append(roots, root)
		if _, err := os.Stat(filepath.Join("/sys/devices", root)); err != nil {
			newRoots = append(newRoots, root)
		}
	}
	sort.Strings(roots)
	sort.Strings(newRoots)
	fuseRoot := filepath.Join(src, fs.PCIRoot)
	if len(newRoots) > 0 {
		devices, err := ns.Overlay("/sys/devices", newRoots...)
		if err != nil {
			return err
		}
		for _, root := range newRoots {
			if err := devices.BindDir(filepath.Join(fuseRoot, root), root); err != nil {
				return err
			}
		}
	}
	for _, root := range roots {
		if slices.Contains(newRoots, root) {
			continue
		}
		dir, err := ns.Overlay(filepath.Join("/sys/devices", root), funcs[root]...)
		if err != nil {
			return err
		}
		for _, fn := range funcs[root] {
			if err := dir.BindDir(filepath.Join(fuseRoot, root, fn), fn); err != nil {
				return err
			}
		}
	}
	bus, err := ns.Overlay("/sys/bus/pci/devices", slots...)
	if err != nil {
		return err
	}
	for _, k := range l.BusLinks {
		if err := bus.Symlink(k.Target, k.Path); err != nil {
			return err
		}
	}
	drivers, err := ns.Overlay("/sys/bus/pci/drivers", device.PCIDriverName)
	if err != nil {
		return err
	}
	return drivers.BindDir(filepath.Join(src, fs.PCIDriverDir), device.PCIDriverName)
}
