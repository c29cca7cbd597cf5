package dhal

import (
	"fmt"
	"strings"
)

// neighbourRule: when it applies to an instance's device count, row gives a
// device's neighbours.
type neighbourRule struct {
	// count is the exact device count the rule needs, or with perGroup the
	// group size the count must be a multiple of.
	count int
	// perGroup rules look up row index%count and OR bit 4 of the index into
	// every entry (that is all the driver does for a second group; devices
	// 32..63 therefore see group-0 neighbours, as on the real driver).
	perGroup bool
	rows     [][]uint32
}

// neighbourRules per product name. Counts that match no rule have no
// neighbours (e.g. single-device instances).
var neighbourRules = map[string][]neighbourRule{
	"Trn1": {{count: 16, perGroup: true, rows: trn1Neighbours[:]}},
	"Inf2": {{count: 12, rows: inf2Ring12[:]}, {count: 6, rows: inf2Line6[:]}},
	"Trn2": {{count: 16, perGroup: true, rows: trn2Neighbours[:]}},
	"Trn3": {{count: 16, perGroup: true, rows: trn2Neighbours[:]}},
}

// Neighbours returns the indices of the devices connected to device index
// (DEVICE_INFO connected_devices, sysfs connected_devices); nil if none or
// if index is out of range. The slice is a fresh copy.
func (in *Instance) Neighbours(index int) []uint32 {
	if index < 0 || index >= in.Devices {
		return nil
	}
	for _, r := range neighbourRules[in.Product.Name] {
		switch {
		case r.perGroup && in.Devices%r.count == 0:
			row := r.rows[index%r.count]
			out := make([]uint32, len(row))
			for i, d := range row {
				out[i] = d | uint32(index)&0x10
			}
			return out
		case !r.perGroup && in.Devices == r.count:
			return append([]uint32(nil), r.rows[index]...)
		}
	}
	return nil
}

// renumbering turns a firmware routing id into a user-visible index:
// index = table[rid%16] (+16*(rid/16) when keepGroup). A nil table is the
// identity.
type renumbering struct {
	table     *[16]uint32
	keepGroup bool
}

func (r renumbering) index(rid uint32) uint32 {
	if r.table == nil {
		return rid
	}
	idx := r.table[rid%16]
	if r.keepGroup {
		idx += rid / 16 * 16
	}
	return idx
}

// routingID inverts index(); base is added to routing ids of tables that
// drop the group (PDS server offset).
func (r renumbering) routingID(index, base uint32) uint32 {
	if r.table == nil {
		return index + base
	}
	for rid, idx := range r.table {
		if idx == index%16 {
			if r.keepGroup {
				return uint32(rid) + index/16*16
			}
			return uint32(rid) + base
		}
	}
	return index + base // unreachable: every table is a permutation of 0..15
}

// renumbering picks the table: Trn1 renames per group of 16, Inf2 keeps routing ids,
// Trn2/Trn3 use the torus table (PDS: the pair table).
func (in *Instance) renumbering() renumbering {
	switch {
	case in.Product.Name == "Trn1":
		return renumbering{table: &trn1RIDToIndex, keepGroup: true}
	case in.Arch() == V2:
		return renumbering{}
	case in.Platform == PlatformPDS:
		return renumbering{table: &pdsRIDToIndex}
	default:
		return renumbering{table: &torusRIDToIndex}
	}
}

// ridBase is the routing id of the first device: PDS servers offset their
// devices by server id times the device count.
func (in *Instance) ridBase(perServer int) uint32 {
	if in.Platform == PlatformPDS && in.Arch() != V2 {
		return in.ServerID * uint32(perServer)
	}
	return 0
}

// RoutingID returns the firmware routing id (misc-RAM 0x24) that makes the
// driver give this device the user-visible index. On PDS the id is
// ServerID*16 + index (the driver maps ids modulo 16); on instance types
// whose driver skips the firmware read it is 0.
func (in *Instance) RoutingID(index int) uint32 {
	if in.Arch() == V4 {
		for _, n := range v4ZeroRoutingIDNames {
			if strings.HasPrefix(in.Name, n) {
				return 0
			}
		}
	}
	return in.renumbering().routingID(uint32(index), in.ridBase(16))
}

// RIDMap returns host_did_to_rid_map exactly as HOST_DEVICE_ID_TO_RID_MAP
// fills it: RIDMapEntries entries, entry[index] = routing id, computed by
// the driver from the device count alone (routing ids 0..n-1, plus
// ServerID*n on PDS); entries no device maps to stay 0. The count the ioctl
// reports next to it is in.Devices. For every shipped profile the first
// Devices entries equal RoutingID(0..Devices-1).
func (in *Instance) RIDMap() []uint32 {
	m := make([]uint32, RIDMapEntries)
	r := in.renumbering()
	base := in.ridBase(in.Devices)
	for i := 0; i < in.Devices; i++ {
		rid := base + uint32(i)
		if idx := r.index(rid); idx < RIDMapEntries {
			m[idx] = rid
		}
	}
	return m
}

// NCMapEntry is one entry of GET_LOGICAL_TO_PHYSICAL_NC_MAP.
type NCMapEntry struct {
	DeviceID uint32
	NCIndex  uint32
}

func ncMapSupported(a Arch) error {
	if a != V3 && a != V4 {
		return fmt.Errorf("dhal: logical-to-physical NC map not supported on %v", a)
	}
	return nil
}

// NCMapTable returns the 128 entries (16 devices x 8 logical cores) that
// GET_LOGICAL_TO_PHYSICAL_NC_MAP copies out, die-flipped when dieFlip.
// Errors on V2 (the driver returns -ENOTSUPP there).
func NCMapTable(a Arch, dieFlip bool) ([]NCMapEntry, error) {
	if err := ncMapSupported(a); err != nil {
		return nil, err
	}
	out := make([]NCMapEntry, NCMapEntries)
	for e := range out {
		src := e
		if dieFlip {
			src ^= dieFlipMask // stays inside the same device: only bits 1..2 change
		}
		dev := src / 8
		out[e] = NCMapEntry{DeviceID: uint32(dev), NCIndex: ncSwapRows[dev][src%8]}
	}
	return out, nil
}

// LogicalToPhysicalNC returns, for device 0..15, the physical core of each
// of the 8 logical cores (the SENG swap table; logical index XOR 6 first
// when dieFlip). Errors on V2 and for devices outside the table.
func LogicalToPhysicalNC(a Arch, device int, dieFlip bool) ([]uint32, error) {
	if err := ncMapSupported(a); err != nil {
		return nil, err
	}
	if device < 0 || device >= len(ncSwapRows) {
		return nil, fmt.Errorf("dhal: NC map has no device %d (0..%d)", device, len(ncSwapRows)-1)
	}
	row := ncSwapRows[device]
	out := make([]uint32, len(row))
	for l := range out {
		src := l
		if dieFlip {
			src ^= dieFlipMask
		}
		out[l] = row[src]
	}
	return out, nil
}
