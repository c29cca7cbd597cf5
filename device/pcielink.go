package device

import "fmt"

// pcieLinkAttributes are the link files the kernel derives from the PCI
// Express capability of every PCIe function.
func (d *Device) pcieLinkAttributes() []Attr {
	l := d.chip.PCI().Link
	speed := func() string { return l.Speed() + "\n" }
	width := func() string { return fmt.Sprintf("%d\n", l.Width) }
	return []Attr{
		{Path: "current_link_speed", Mode: 0o444, Show: speed},
		{Path: "current_link_width", Mode: 0o444, Show: width},
		{Path: "max_link_speed", Mode: 0o444, Show: speed},
		{Path: "max_link_width", Mode: 0o444, Show: width},
	}
}
