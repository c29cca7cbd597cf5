package replay

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// Array members of structs (DMA_QUEUE_INIT_BATCH's entries, each a
// DMA_QUEUE_INIT with its rings' memory handles) hold handles too: a
// replay that maps handles maps those, and compares the entries as
// mapped.

// hasArrays says whether a layout has array members with handles inside.
func hasArrays(st abi.Struct) bool {
	for _, f := range st.Fields {
		if f.Role == ioctl.RoleArray && f.ElemLayout != nil {
			return true
		}
	}
	return false
}

// mapArrayHandles rewrites the handles inside the array members of the
// argument b through the handle map (handles no call returned stay as
// they are), up to each array's count.
func (s *state) mapArrayHandles(st abi.Struct, b []byte) {
	for _, arr := range st.Fields {
		entry := arr.ElemLayout
		if arr.Role != ioctl.RoleArray || entry == nil || entry.Size == 0 {
			continue
		}
		count, ok := st.Field(arr.Count)
		n, ok2 := abi.Uint(b, count)
		if !ok || !ok2 || arr.Size == 0 {
			continue
		}
		n = min(n, uint64(arr.Size/entry.Size))
		for i := range int(n) {
			e := b[arr.Offset+i*entry.Size:][:entry.Size]
			for _, f := range entry.Fields {
				if !f.Handle() || f.Size != 8 {
					continue
				}
				if h, ok := s.Handles[binary.LittleEndian.Uint64(e[f.Offset:])]; ok {
					binary.LittleEndian.PutUint64(e[f.Offset:], h)
				}
			}
		}
	}
}
