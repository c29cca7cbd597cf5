package pod

import (
	"fmt"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Hub is one pod's meeting point: who sits in which slot and the misc-RAM
// registers each published. Both coordinators keep one per pod.
type Hub struct {
	mu    lockrank.Mutex[lockrank.PodHub]
	size  int // 0 until the first join
	slots [MaxNodes]hubSlot
	cut   map[end]bool // link ends cut by CutLink
	gen   uint64
}

type slotState int

const (
	slotEmpty    slotState = iota // never joined: reads see a chip that is not up
	slotJoined                    //
	slotDeparted                  // left or died: reads fail
)

type hubSlot struct {
	state slotState
	gen   uint64 // identifies the member holding the slot
	regs  map[reg]uint32
}

type reg struct {
	dev int
	off uint32
}

// end names one end of a link: a slot and the side it leaves by.
type end struct {
	slot int
	side Side
}

// NewHub returns an empty pod.
func NewHub() *Hub { return &Hub{cut: map[end]bool{}} }

// join seats a member and returns its slot and generation.
func (h *Hub) join(j Join) (slot int, gen uint64, err error) {
	if err := j.validate(); err != nil {
		return 0, 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.anyJoinedLocked() {
		// Nobody is here: the pod can be rebuilt with another size. With
		// the same size, members that left still read as gone, so a
		// newcomer notices a dead peer at once.
		if h.size != j.Size {
			h.size = j.Size
			h.slots = [MaxNodes]hubSlot{}
		}
	} else if h.size != j.Size {
		return 0, 0, fmt.Errorf("pod %s has %d nodes, not %d", j.Pod, h.size, j.Size)
	}
	slot = j.Slot
	if slot < 0 {
		for slot = 0; slot < h.size && h.slots[slot].state == slotJoined; slot++ {
		}
		if slot == h.size {
			return 0, 0, fmt.Errorf("pod %s is full (%d nodes)", j.Pod, h.size)
		}
	} else if h.slots[slot].state == slotJoined {
		return 0, 0, fmt.Errorf("pod %s: slot %d is taken", j.Pod, slot)
	}
	h.gen++
	h.slots[slot] = hubSlot{state: slotJoined, gen: h.gen, regs: map[reg]uint32{}}
	return slot, h.gen, nil
}

func (h *Hub) anyJoinedLocked() bool {
	for i := 0; i < h.size; i++ {
		if h.slots[i].state == slotJoined {
			return true
		}
	}
	return false
}

// member returns the slot if gen still holds it.
func (h *Hub) memberLocked(slot int, gen uint64) (*hubSlot, error) {
	if slot < 0 || slot >= h.size || h.slots[slot].state != slotJoined || h.slots[slot].gen != gen {
		return nil, ErrLink
	}
	return &h.slots[slot], nil
}

func (h *Hub) leave(slot int, gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, err := h.memberLocked(slot, gen); err == nil {
		s.state = slotDeparted
		s.regs = nil
	}
}

func (h *Hub) publish(slot int, gen uint64, dev int, off, v uint32) error {
	if err := checkRegs(dev, off, 1); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.memberLocked(slot, gen)
	if err != nil {
		return err
	}
	s.regs[reg{dev, off}] = v
	return nil
}

func (h *Hub) read(slot int, gen uint64, side Side, dev int, off uint32, n int) ([]uint32, error) {
	if err := checkRegs(dev, off, n); err != nil {
		return nil, err
	}
	if side != Left && side != Right {
		return nil, fmt.Errorf("pod: bad side %d", side)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.memberLocked(slot, gen); err != nil {
		return nil, err
	}
	other := neighbor(h.size, slot, side)
	if h.cut[end{slot, side}] || h.cut[end{other, side}] {
		return nil, ErrLink
	}
	nb := &h.slots[other]
	out := make([]uint32, n)
	switch nb.state {
	case slotEmpty:
	case slotDeparted:
		return nil, ErrLink
	default:
		for i := range out {
			out[i] = nb.regs[reg{dev, off + 4*uint32(i)}]
		}
	}
	return out, nil
}

// CutLink breaks (or, with cut false, mends) the link across side from
// slot: reads over it fail from both ends, as a broken cable would.
func (h *Hub) CutLink(slot int, side Side, cut bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut[end{slot, side}] = cut
}

// Members returns the slots currently joined.
func (h *Hub) Members() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for i := 0; i < h.size; i++ {
		if h.slots[i].state == slotJoined {
			out = append(out, i)
		}
	}
	return out
}
