package chip

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/dhal"
)

// Config-space offsets and ids the capability list uses (PCI 3.0 and
// PCI Express 6.0 base specifications).
const (
	pciStatus        = 0x06
	pciStatusCapList = 0x0010
	pciCapPointer    = 0x34
	pciCapStart      = 0x40 // first capability, right after the header
	pciCapAlign      = 0x10 // each capability starts on its own 16 bytes

	pciCapIDPM    = 0x01
	pciCapIDPCIe  = 0x10
	pciCapIDMSIX  = 0x11
	pmCapSize     = 8
	msixCapSize   = 12
	pcieCapSizeV2 = 0x3c
)

// pciCap is one entry of the function's capability list: its id, its
// length and what fills its body (c is the config space from the
// capability's header on; the id and next pointer are set by putCaps).
type pciCap struct {
	id   uint8
	size int
	fill func(f *PCIFunction, c []byte)
}

// pciCaps is the capability list, in list order: what a PCI Express
// endpoint carries and lspci, hwloc and the kernel read. No extended
// capability is listed (the extended space reads zero, which ends the
// list at 0x100).
var pciCaps = []pciCap{
	{pciCapIDPM, pmCapSize, fillPM},
	{pciCapIDMSIX, msixCapSize, fillMSIX},
	{pciCapIDPCIe, pcieCapSizeV2, fillPCIe},
}

// putCaps lays the capability list into config space c and points the
// header at it.
func (f *PCIFunction) putCaps(c []byte) {
	le := binary.LittleEndian
	le.PutUint16(c[pciStatus:], le.Uint16(c[pciStatus:])|pciStatusCapList)
	c[pciCapPointer] = pciCapStart
	off := pciCapStart
	for i, cp := range pciCaps {
		next := 0
		if i+1 < len(pciCaps) {
			next = (off + cp.size + pciCapAlign - 1) &^ (pciCapAlign - 1)
		}
		c[off] = cp.id
		c[off+1] = byte(next)
		cp.fill(f, c[off:off+cp.size])
		off = next
	}
}

// fillPM: power management version 3, no D1/D2 and no PME; the function
// is in D0 with No_Soft_Reset (a D3hot->D0 transition keeps its state).
func fillPM(_ *PCIFunction, c []byte) {
	le := binary.LittleEndian
	le.PutUint16(c[2:], 0x0003) // PMC: version 3
	le.PutUint16(c[4:], 0x0008) // PMCSR: D0, No_Soft_Reset
}

// fillMSIX: the table and PBA at the top of BAR0, disabled: the driver
// polls and never enables MSI-X (or MSI), so the kernel shows Enable-,
// irq 0 and no msi_irqs directory.
func fillMSIX(f *PCIFunction, c []byte) {
	le := binary.LittleEndian
	le.PutUint16(c[2:], dhal.MSIXVectors-1) // table size - 1; Enable and Function Mask clear
	table, pba := f.msixLayout()
	le.PutUint32(c[4:], uint32(table)) // BIR 0
	le.PutUint32(c[8:], uint32(pba))
}

// msixLayout is where in BAR0 the MSI-X table and PBA sit: the last two
// pages, away from the registers the driver maps (placement is not a
// driver fact).
func (f *PCIFunction) msixLayout() (table, pba uint64) {
	size := f.BAR0Size
	return size - 0x2000, size - 0x1000
}

// PCI Express capability fields (version 2, endpoint).
const (
	pcieFlagsV2Endpoint = 0x0002
	// DevCap: max payload 512 bytes, extended tags, unlimited L0s/L1
	// acceptable latency, role-based error reporting.
	pcieDevCap = 0x2 | 1<<5 | 7<<6 | 7<<9 | 1<<15
	// DevCtl: relaxed ordering, extended tags, no snoop, max payload 256
	// bytes, max read request 512 bytes (what Linux sets on EC2 hosts).
	pcieDevCtl = 1<<4 | 1<<5 | 1<<8 | 1<<11 | 2<<12
	// DevCap2: completion timeout ranges A-D, timeout disable.
	pcieDevCap2 = 0x1f
	// LnkSta2: equalization complete, phases 1-3 successful (Gen3 on).
	pcieLnkSta2Equalized = 0x1e
	pcieLnkStaSlotClock  = 1 << 12
)

// fillPCIe: an endpoint whose link trained at its maximum speed and
// width (dhal.PCIeLink per product).
func fillPCIe(f *PCIFunction, c []byte) {
	le := binary.LittleEndian
	l := f.Link
	speed, width := uint32(l.Gen), uint32(l.Width)
	le.PutUint16(c[0x02:], pcieFlagsV2Endpoint)
	le.PutUint32(c[0x04:], pcieDevCap)
	le.PutUint16(c[0x08:], pcieDevCtl)
	le.PutUint32(c[0x0c:], speed|width<<4)                             // LnkCap: max speed and width, no ASPM
	le.PutUint16(c[0x12:], uint16(speed|width<<4|pcieLnkStaSlotClock)) // LnkSta
	le.PutUint32(c[0x24:], pcieDevCap2)
	le.PutUint32(c[0x2c:], (1<<speed-1)<<1) // LnkCap2: every speed up to the max
	le.PutUint16(c[0x30:], uint16(speed))   // LnkCtl2: target speed
	if l.Gen >= 3 {
		le.PutUint16(c[0x32:], pcieLnkSta2Equalized)
	}
}
