package dhal

// Device-to-device routes. On V3/V4 a DMA engine reaches a neighbouring
// device through one of four "neighbour memory access" windows whose
// bases the driver's address map names (bits 52-53 set, bits 50-51 the
// window); which bits carry what beyond that is not public. The emulator
// pins this convention, a guess (docs/collectives.md):
//
//   - an address whose route bits (peerRouteMask) equal peerRoutes[k] goes
//     to connected_devices[k] of the issuing device;
//   - the address inside that device is the address with the route bits
//     cleared: its own SoC address (HBM, TPB SBUF and semaphore windows,
//     TopSP windows, even its host route).
//
// V2 has no documented peer route (only the host route is): an address
// that is neither local nor host decodes to nothing there, and the queue
// aborts as on any unreachable address.
//
// This file is the one place that defines the encoding.

// PeerRoute reports whether addr lies in a neighbour window: the window
// (link, a column of connected_devices) and the address inside the peer.
func (f *ArchFacts) PeerRoute(addr uint64) (link int, local uint64, ok bool) {
	if f.peerRouteMask == 0 || addr&f.peerRouteMask == 0 {
		return 0, 0, false
	}
	for k, base := range f.peerRoutes {
		if addr&f.peerRouteMask == base {
			return k, addr &^ f.peerRouteMask, true
		}
	}
	return 0, 0, false
}

// PeerAddress is the address that device-local address local has when
// seen through neighbour window link; ok is false on an arch without
// neighbour windows or for a link it lacks.
func (f *ArchFacts) PeerAddress(link int, local uint64) (uint64, bool) {
	if link < 0 || link >= len(f.peerRoutes) {
		return 0, false
	}
	return f.peerRoutes[link] | local&^f.peerRouteMask, true
}

// PeerLinks is the number of neighbour windows (0 on V2).
func (f *ArchFacts) PeerLinks() int { return len(f.peerRoutes) }

// v3PeerRoutes are the V3/V4 windows B0_0..B0_3, and the mask of the bits
// they differ in from a local address.
var (
	v3PeerRoutes    = []uint64{0x10000000000000, 0x14000000000000, 0x18000000000000, 0x1c000000000000}
	v3PeerRouteMask = uint64(0x3c000000000000)
)

// TPBSoCBase is the SoC address of core's TPB window, what a DMA
// descriptor names (InvalidOffset if core is out of range). On V3/V4 it is
// not the offset the SEMAPHORE mmap resource of cores 1-7 has.
func (f *ArchFacts) TPBSoCBase(core int) uint64 { return pick(f.tpbSoC, core, InvalidOffset) }

// v3TPBSoC are the V3/V4 TPB SoC windows, by core.
var v3TPBSoC = []uint64{0x2000000000, 0x3000000000, 0x6000000000, 0x7000000000, 0x802000000000, 0x803000000000, 0x806000000000, 0x807000000000}
