package dhal

// Q7Geometry is where the POOL engine's Q7 cores keep their microcode in
// a core's TPB window, as the runtime's HAL reports it (wiki 59944145351
// §3, 59855581721 §3): core i's IRAM at Base + i·Stride, its DRAM one
// IRAM aperture (IRAM + IRAMReserved) further. The runtime writes each
// image zero-padded to IRAM / DRAM bytes, DRAM first, then reads the
// DRAM's first word for the ready magic and writes its claim there.
type Q7Geometry struct {
	Base                       uint64 // TPB-window offset of core 0's IRAM
	IRAM, DRAM                 uint64 // image apertures
	IRAMReserved, DRAMReserved uint64 // tails the firmware stages into (V3/V4)
	Cores                      int
}

// The boot handshake's words (wiki 59855581721 §7.5): the first word of
// a booted DRAM image, and the claim the runtime writes over it.
const (
	UcodeReadyMagic = 0x6099cb34
	UcodeClaimMagic = 0x502b2da1
)

// Q7Pool is the POOL engine's Q7 geometry on this architecture.
func (f *ArchFacts) Q7Pool() Q7Geometry {
	if f.Arch == V2 {
		return Q7Geometry{Base: 0x2980000, IRAM: 0x10000, DRAM: 0x10000, Cores: 8}
	}
	return Q7Geometry{Base: 0x3100000, IRAM: 0x20000, DRAM: 0x40000, IRAMReserved: 0x60000, DRAMReserved: 0x40000, Cores: 8}
}

// Stride is the TPB-window distance between two Q7 cores' RAMs.
func (g Q7Geometry) Stride() uint64 { return g.IRAM + g.IRAMReserved + g.DRAM + g.DRAMReserved }

// IRAMOffset is the TPB-window offset of Q7 core i's IRAM.
func (g Q7Geometry) IRAMOffset(i int) uint64 { return g.Base + uint64(i)*g.Stride() }

// DRAMOffset is the TPB-window offset of Q7 core i's DRAM.
func (g Q7Geometry) DRAMOffset(i int) uint64 { return g.IRAMOffset(i) + g.IRAM + g.IRAMReserved }
