package dhal

import "fmt"

// PCIeLink is the PCI Express link of a Neuron function: its generation
// (1 = 2.5 GT/s ... 6 = 64 GT/s, the kernel's and the spec's speed codes)
// and lane count. The link trains at its maximum on these hosts, so the
// current link is the same.
type PCIeLink struct {
	Gen   int
	Width int
}

// pcieLinks per product. No source the project has gives these numbers:
// they are guesses from each chip's PCIe generation as AWS describes the
// instances (Trn1/Inf2 Gen4, Trn2 Gen5, Trn3 one generation on) with a
// full x16 link; only consistency between the files matters to tools.
var pcieLinks = map[string]PCIeLink{
	"Trn1": {Gen: 4, Width: 16}, // guess
	"Inf2": {Gen: 4, Width: 16}, // guess
	"Trn2": {Gen: 5, Width: 16}, // guess
	"Trn3": {Gen: 6, Width: 16}, // guess
}

// PCIeLink returns the product's link.
func (p *Product) PCIeLink() PCIeLink {
	if l, ok := pcieLinks[p.Name]; ok {
		return l
	}
	return PCIeLink{Gen: 4, Width: 16}
}

// pcieSpeeds are the kernel's names of the link speeds by generation, as
// sysfs prints them (current_link_speed, max_link_speed).
var pcieSpeeds = [...]string{1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}

// Speed is the link speed as sysfs prints it, e.g. "32.0 GT/s PCIe".
func (l PCIeLink) Speed() string {
	if l.Gen <= 0 || l.Gen >= len(pcieSpeeds) {
		return "Unknown"
	}
	return pcieSpeeds[l.Gen]
}

func (l PCIeLink) String() string { return fmt.Sprintf("%s x%d", l.Speed(), l.Width) }

// MSIXVectors is the MSI-X table size the functions advertise. The
// driver never enables MSI-X or MSI and requests no interrupt (it polls
// its queues), so no source ties the count to anything the driver does;
// 32 is a guess for the hardware's table.
const MSIXVectors = 32
