package replay

import (
	"encoding/binary"
	"fmt"

	"github.com/neuronfs/neuronfs/trace/abi"
)

// BAR addresses: DEVICE_INFO reports where the device's BARs are, and
// BAR_READ and BAR_WRITE take arrays of addresses inside them. A capture
// from another host has other BAR addresses, so with --map-addresses the
// BARs DEVICE_INFO reports are learned (a map of their own, applied only
// to those arrays) and the arrays are translated.

// translateBARs rewrites an array of recorded BAR addresses.
func (s *state) translateBARs(b []byte) {
	for off := 0; off+8 <= len(b); off += 8 {
		a := binary.LittleEndian.Uint64(b[off:])
		binary.LittleEndian.PutUint64(b[off:], s.BARs.translate(a))
	}
}

// learnBARs compares DEVICE_INFO's bar_address array with address mapping:
// each BAR that is elsewhere here is learned, with the size this replay's
// bar_size gives, and listed as not compared.
func (s *state) learnBARs(res *Result, st abi.Struct, addrs abi.Field, want, got []byte) {
	sizes, _ := st.Field("bar_size") // the sizes of the BARs at the same index
	for i := 0; i+8 <= addrs.Size; i += 8 {
		old := binary.LittleEndian.Uint64(want[addrs.Offset+i:])
		new := binary.LittleEndian.Uint64(got[addrs.Offset+i:])
		if old == new {
			continue
		}
		var size uint64
		if i+8 <= sizes.Size {
			size = binary.LittleEndian.Uint64(got[sizes.Offset+i:])
		}
		s.BARs.learn(old, new, max(size, defaultAddrSpan))
		s.rewrote(res, fmt.Sprintf("bar_address[%d] (recorded %#x is %#x here)", i/8, old, new))
	}
}
