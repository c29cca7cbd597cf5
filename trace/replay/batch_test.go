package replay

import (
	"encoding/binary"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// The ring handles of a batch's used entries go through the handle map;
// unused entries and unknown handles stay as they are.
func TestMapArrayHandles(t *testing.T) {
	_, st, ok := abi.ForCommand(ioctl.Default(), ioctl.CmdDMAQueueInitBatch)
	arr, ok2 := st.Field("entries")
	if !ok || !ok2 || arr.ElemLayout == nil {
		t.Fatal("no batch layout")
	}
	entry := arr.ElemLayout
	const entries, tx, rx = 8, 16, 24 // offsets in the C layout
	b := make([]byte, st.Size)
	binary.LittleEndian.PutUint32(b, 2) // count
	put := func(i, off int, v uint64) { binary.LittleEndian.PutUint64(b[entries+i*entry.Size+off:], v) }
	get := func(i, off int) uint64 { return binary.LittleEndian.Uint64(b[entries+i*entry.Size+off:]) }
	put(0, tx, 1)
	put(0, rx, 2)
	put(1, tx, 7) // no call returned 7
	put(2, tx, 1) // beyond count
	s := &state{shared: shared{Handles: map[uint64]uint64{1: 9, 2: 10}}}
	s.mapArrayHandles(st, b)
	if get(0, tx) != 9 || get(0, rx) != 10 || get(1, tx) != 7 || get(2, tx) != 1 {
		t.Fatalf("entries after mapping: %d %d %d %d", get(0, tx), get(0, rx), get(1, tx), get(2, tx))
	}
}
