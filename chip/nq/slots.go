package nq

// SlotState is one bound queue of a block as its registers show it: the
// ring's size and the producer's and consumer's offsets in it, and how
// many records the block wrote into it since it was bound or re-enabled.
type SlotState struct {
	Slot       int
	Size       uint32
	Head, Tail uint32
	Enabled    bool
	Records    uint64
}

// Slots returns the queues bound to a ring (size not 0), in slot order,
// for the control interface's state file.
func (b *Block) Slots() []SlotState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []SlotState
	for q, s := range b.slots {
		if s.size == 0 {
			continue
		}
		out = append(out, SlotState{Slot: q, Size: s.size, Head: s.head, Tail: s.tail, Enabled: b.enable&(1<<q) != 0, Records: s.written})
	}
	return out
}
