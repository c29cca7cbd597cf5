package dhal

import "fmt"

// The PCI identity every Neuron function shares besides its device id
// (Product.PCIDevice). Class 0x088000 is base class 08 (system
// peripheral), subclass 80 (other): what the devices are listed as; no
// driver code depends on it. The subsystem is the vendor's with device 0,
// as the PCI id database lists it for Trainium (1d0f:7164 sub 1d0f:0000).
const (
	PCIClass           = 0x088000
	PCISubsystemVendor = amazonVendor
	PCISubsystemDevice = 0x0000
)

// PCIBAR is one memory BAR of a Neuron function. All are 64-bit, so BAR
// Index takes config-space slots Index and Index+1.
type PCIBAR struct {
	Index        int
	Base, Size   uint64
	Prefetchable bool
}

// pciMMIOBase is where the emulated host's firmware places the Neuron
// functions' BARs: above every host RAM address, one aligned window per
// device (not a driver fact; only consistency between the files matters).
const pciMMIOBase = 0x200000000000

// BAR4Size is the device-memory window: every HBM channel at its BAR4
// stride.
func (f *ArchFacts) BAR4Size() uint64 { return uint64(f.HBMChannels) * f.BAR4ChannelStride }

// PCIBARs returns the BARs of device index: BAR0 the registers (BAR0Size,
// what DEVICE_INFO reports as bar_size[0]), BAR4 device memory,
// prefetchable since the driver maps it write-combining. BAR2 is unused.
func (f *ArchFacts) PCIBARs(index int) []PCIBAR {
	window := 2 * max(f.BAR4Size(), f.BAR0Size)
	base := pciMMIOBase + uint64(index)*window
	return []PCIBAR{
		{Index: 0, Base: base + window/2, Size: f.BAR0Size},
		{Index: 4, Base: base, Size: f.BAR4Size(), Prefetchable: true},
	}
}

// RootBus is the sysfs directory of b's root bus, e.g. "pci0000:10".
func (b BDF) RootBus() string { return fmt.Sprintf("pci%04x:%02x", b.Domain, b.Bus) }

// PCI revisions that mark a simulated device: the hardware emulator and
// QEMU. The driver switches to other implementations on them (and takes
// no power samples).
const (
	RevisionEmulator = 240
	RevisionQEMU     = 255
)
