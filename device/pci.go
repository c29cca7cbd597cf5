package device

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/neuronfs/neuronfs/chip"
)

// PCIDriverName is the name the driver registers its PCI driver under
// (/sys/bus/pci/drivers/<name>, DRIVER= in the functions' uevent).
const PCIDriverName = "neuron-driver"

// pciConfigUnprivileged is what a sysfs reader without CAP_SYS_ADMIN
// sees of the config space (chip.PCIConfigSize): the standard header's
// first 64 bytes.
const pciConfigUnprivileged = 64

// Resource flags the kernel prints in a function's resource file for a
// 64-bit memory BAR (IORESOURCE_MEM | IORESOURCE_SIZEALIGN |
// IORESOURCE_MEM_64, plus the BAR's own type bits), and the prefetch bits.
const (
	resourceMem64    = 0x140204
	resourcePrefetch = 0x2008
)

// pciResourceLines is the number of lines of resource: six BARs and the
// expansion ROM.
const pciResourceLines = 7

// PCISlot returns the device's PCI address, e.g. "0000:cc:00.0".
func (d *Device) PCISlot() string { return d.sys.Instance.BDFs[d.Index].String() }

// PCIPath returns the function's directory under /sys/devices, e.g.
// "pci0000:cc/0000:cc:00.0".
func (d *Device) PCIPath() string {
	b := d.sys.Instance.BDFs[d.Index]
	return b.RootBus() + "/" + b.String()
}

// PCIAttributes returns the files of the function's directory.
func (d *Device) PCIAttributes() []Attr {
	id := d.chip.PCI()
	text := func(v string) func() string { return func() string { return v } }
	hex16 := func(v uint16) func() string { return text(fmt.Sprintf("0x%04x\n", v)) }
	modalias := fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
		id.Vendor, id.Device, id.SubVendor, id.SubDevice, id.Class>>16, id.Class>>8&0xff, id.Class&0xff)
	uevent := fmt.Sprintf("DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=%s\n",
		PCIDriverName, id.Class, id.Vendor, id.Device, id.SubVendor, id.SubDevice, d.PCISlot(), modalias)
	config := string(id.Config())
	attrs := []Attr{
		{Path: "vendor", Mode: 0o444, Show: hex16(id.Vendor)},
		{Path: "device", Mode: 0o444, Show: hex16(id.Device)},
		{Path: "subsystem_vendor", Mode: 0o444, Show: hex16(id.SubVendor)},
		{Path: "subsystem_device", Mode: 0o444, Show: hex16(id.SubDevice)},
		{Path: "class", Mode: 0o444, Show: text(fmt.Sprintf("0x%06x\n", id.Class))},
		{Path: "revision", Mode: 0o444, Show: text(fmt.Sprintf("0x%02x\n", id.Revision))},
		{Path: "config", Mode: 0o644, Size: chip.PCIConfigSize, UnprivilegedLen: pciConfigUnprivileged, Show: text(config)},
		{Path: "resource", Mode: 0o444, Show: text(d.pciResource())},
		{Path: "modalias", Mode: 0o444, Show: text(modalias + "\n")},
		{Path: "uevent", Mode: 0o644, Show: text(uevent), Store: func([]byte) syscall.Errno { return 0 }},
		{Path: "irq", Mode: 0o444, Show: text("0\n")},
		{Path: "enable", Mode: 0o644, Show: text("1\n")},
		{Path: "numa_node", Mode: 0o644, Show: text("-1\n")},
		{Path: "local_cpus", Mode: 0o444, Show: func() string { return hostCPUs().mask() + "\n" }},
		{Path: "local_cpulist", Mode: 0o444, Show: func() string { return hostCPUs().list + "\n" }},
		{Path: "power_state", Mode: 0o444, Show: text("D0\n")},
		{Path: "dma_mask_bits", Mode: 0o444, Show: text("64\n")},
		{Path: "consistent_dma_mask_bits", Mode: 0o444, Show: text("64\n")},
		{Path: "broken_parity_status", Mode: 0o644, Show: text("0\n")},
		{Path: "msi_bus", Mode: 0o644, Show: text("1\n")},
		{Path: "d3cold_allowed", Mode: 0o644, Show: text("1\n")},
		{Path: "driver_override", Mode: 0o644, Show: text("(null)\n")},
		{Path: "ari_enabled", Mode: 0o444, Show: text("0\n")},
	}
	attrs = append(attrs, d.pcieLinkAttributes()...)
	return append(attrs, d.pciPM.attributes("power")...)
}

// PCILinks returns the function directory's symlinks.
func (d *Device) PCILinks() []Link {
	return []Link{
		{Path: "driver", Target: "../../../bus/pci/drivers/" + PCIDriverName},
		{Path: "subsystem", Target: "../../../bus/pci"},
	}
}

// pciResource renders the resource file: start, end and flags of each
// BAR slot and the ROM, zeros where there is none (the upper half of a
// 64-bit BAR included).
func (d *Device) pciResource() string {
	var lines [pciResourceLines][3]uint64
	for _, b := range d.sys.Arch.PCIBARs(d.Index) {
		flags := uint64(resourceMem64)
		if b.Prefetchable {
			flags |= resourcePrefetch
		}
		lines[b.Index] = [3]uint64{b.Base, b.Base + b.Size - 1, flags}
	}
	var sb strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&sb, "0x%016x 0x%016x 0x%016x\n", l[0], l[1], l[2])
	}
	return sb.String()
}
