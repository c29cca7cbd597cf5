package replay

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/trace/abi"
)

// DMA_QUEUE_INIT_BATCH carries up to 256 DMA_QUEUE_INIT structs in its
// "entries" array, each with its rings' memory handles; a replay that maps
// handles must map those too, and compare the entries as mapped.

const batchCommand = "NEURON_IOCTL_DMA_QUEUE_INIT_BATCH"

// mapBatchHandles rewrites the ring handles of the batch argument b
// through the handle map (handles no call returned stay as they are).
func (s *state) mapBatchHandles(st abi.Struct, b []byte) {
	var count, entries abi.Field
	for _, f := range st.Fields {
		switch f.Name {
		case "count":
			count = f
		case "entries":
			entries = f
		}
	}
	entry, ok := abi.Lookup("neuron_ioctl_dma_queue_init")
	n, ok2 := abi.Uint(b, count)
	if !ok || !ok2 || entries.Size == 0 || entry.Size == 0 {
		return
	}
	n = min(n, uint64(entries.Size/entry.Size))
	for i := range int(n) {
		e := b[entries.Offset+i*entry.Size:][:entry.Size]
		for _, f := range entry.Fields {
			if !f.Handle() || f.Size != 8 {
				continue
			}
			if h, ok := s.handles[binary.LittleEndian.Uint64(e[f.Offset:])]; ok {
				binary.LittleEndian.PutUint64(e[f.Offset:], h)
			}
		}
	}
}
