package chip

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/dhal"
)

// PCIConfigSize is the config space of a PCI Express endpoint: the
// header, the capability list (pcicaps.go) and an empty extended space.
const PCIConfigSize = 4096

// PCIFunction is the chip's PCI function as the bus sees it.
type PCIFunction struct {
	Vendor, Device, SubVendor, SubDevice uint16
	Class                                uint32
	Revision                             uint8
	BARs                                 []dhal.PCIBAR
	BAR0Size                             uint64
	Link                                 dhal.PCIeLink // trained at its maximum
}

// PCI returns the chip's PCI function.
func (c *Chip) PCI() *PCIFunction { return &c.cfg.PCI }

// Config lays out the function's config space (little endian): ids,
// command (memory space and bus master on, as after the driver's probe),
// status with the capability list, revision and class, header type 0, the
// 64-bit BARs, the subsystem ids, the capabilities (pciCaps); no
// interrupt pin.
func (f *PCIFunction) Config() []byte {
	c := make([]byte, PCIConfigSize)
	le := binary.LittleEndian
	le.PutUint16(c[0x00:], f.Vendor)
	le.PutUint16(c[0x02:], f.Device)
	le.PutUint16(c[0x04:], 0x0006)
	le.PutUint32(c[0x08:], f.Class<<8|uint32(f.Revision))
	for _, b := range f.BARs {
		low := uint32(b.Base&0xfffffff0) | 0x4
		if b.Prefetchable {
			low |= 0x8
		}
		le.PutUint32(c[0x10+4*b.Index:], low)
		le.PutUint32(c[0x14+4*b.Index:], uint32(b.Base>>32))
	}
	le.PutUint16(c[0x2c:], f.SubVendor)
	le.PutUint16(c[0x2e:], f.SubDevice)
	f.putCaps(c)
	return c
}
