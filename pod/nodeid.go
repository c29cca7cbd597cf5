package pod

// NodeID elects this node's id from serial numbers, as every node of the
// ring computes it on its own: the lowest serial leads (node 0) and its
// serial becomes the pod's. diagonal is the serial the left neighbour saw
// on its right link. A single link in use, or both links reaching the same
// neighbour, is a 2-node pod.
func NodeID(self, left, right, diagonal uint64, lrMask uint8) (id, count int, podSerial uint64) {
	if lrMask != LinkBoth || left == right {
		other := left
		if lrMask == LinkRight {
			other = right
		}
		if self < other {
			return 0, 2, self
		}
		return 1, 2, other
	}
	if self < diagonal {
		if self < left && self < right {
			return 0, 4, self
		}
	} else if diagonal < left && diagonal < right {
		return 2, 4, diagonal
	}
	if left < right {
		return 1, 4, left
	}
	return 3, 4, right
}

// Result is what an election decided.
type Result struct {
	NodeID    int // -1: none
	NodeCount int
	PodSerial uint64
	LRMask    uint8
}

// ModeSupported reports whether an election result allows operating mode m.
func (r Result) ModeSupported(m Mode) bool {
	switch m {
	case ModeX4:
		return r.NodeCount == 4
	case ModeX2V:
		return r.NodeCount >= 2 && r.LRMask&LinkLeft != 0
	case ModeX2H:
		return r.NodeCount == 2 && r.LRMask&LinkRight != 0
	case ModeX1:
		return true
	}
	return false
}

// ModesSupported is the POD_STATUS_V2 bitmap: bit m for each mode m.
func (r Result) ModesSupported() uint32 {
	var bits uint32
	for m := ModeX4; m <= ModeX1; m++ {
		if r.ModeSupported(m) {
			bits |= 1 << m
		}
	}
	return bits
}

// Halves of a 4-node pod split into two 2-node pods, by node id.
var (
	x2hNode = [4]int{0, 0, 1, 1}
	x2vNode = [4]int{0, 1, 0, 1}
	// The second pair of a split pod gets the pod serial minus one, so the
	// halves have distinct ids.
	x2hSecond = [4]bool{false, true, false, true}
	x2vSecond = [4]bool{false, false, true, true}
)

// ModalNodeID is the node id seen in mode m.
func (r Result) ModalNodeID(m Mode) int {
	id := r.NodeID
	four := r.NodeCount == 4 && id >= 0 && id < 4
	switch m {
	case ModeUnset:
	case ModeX4:
		if r.NodeCount != 4 {
			id = -1
		}
	case ModeX2H:
		if four {
			id = x2hNode[id]
		}
	case ModeX2V:
		if four {
			id = x2vNode[id]
		}
	default:
		id = -1
	}
	return id
}

// ModalNodeCount is the pod size seen in mode m.
func (r Result) ModalNodeCount(m Mode) int {
	n := r.NodeCount
	switch m {
	case ModeUnset:
	case ModeX4:
		if n != 4 {
			n = 0
		}
	case ModeX2H, ModeX2V:
		if n == 4 {
			n = 2
		}
	default:
		n = 0
	}
	return n
}

// ModalSerial is the pod serial seen in mode m.
func (r Result) ModalSerial(m Mode) uint64 {
	s := r.PodSerial
	four := r.NodeCount == 4 && r.NodeID >= 0 && r.NodeID < 4
	switch m {
	case ModeUnset:
	case ModeX4:
		if r.NodeCount != 4 {
			s = 0
		}
	case ModeX2H:
		if four && x2hSecond[r.NodeID] {
			s--
		}
	case ModeX2V:
		if four && x2vSecond[r.NodeID] {
			s--
		}
	case ModeX1:
		s = 0
	}
	return s
}
