package pod

import (
	"context"
	"errors"
	"fmt"
)

// Side names a link pair of a server's primary device (and of every
// secondary, which has the same cabling to the same device index of the
// neighbouring server).
type Side int

const (
	Left  Side = 0 // vertical
	Right Side = 1 // horizontal
)

func (s Side) String() string {
	if s == Left {
		return "left"
	}
	return "right"
}

// MaxNodes is the largest pod.
const MaxNodes = 4

// Coordinator connects the servers of pods. Each server joins with its
// pod's name and gets a Port, its end of the links.
type Coordinator interface {
	Join(ctx context.Context, j Join) (Port, error)
}

// Join describes a server joining a pod.
type Join struct {
	Pod    string
	Size   int    // nodes in the pod: 2 or 4
	Slot   int    // position in the pod's cabling; -1: the first free one
	Serial uint64 // the node's serial number (device 0's), for logs
}

func (j Join) validate() error {
	if j.Pod == "" || len(j.Pod) > maxPodName {
		return fmt.Errorf("pod: name must have 1..%d bytes", maxPodName)
	}
	if j.Size != 2 && j.Size != 4 {
		return fmt.Errorf("pod: size %d: must be 2 or 4", j.Size)
	}
	if j.Slot < -1 || j.Slot >= j.Size {
		return fmt.Errorf("pod: slot %d out of range for %d nodes", j.Slot, j.Size)
	}
	return nil
}

const maxPodName = 64

// Port is a server's end of its links. Publish makes one of its misc-RAM
// registers visible to its neighbours; Read reads n registers from offset
// off of device dev on the neighbour across side.
//
// A neighbour that has not joined yet reads as zeros (a chip that is not
// up), as the driver's retries expect. A neighbour that left, or a cut
// link, fails with ErrLink. Transport failures fail with other errors;
// the port is then unusable and must be closed.
type Port interface {
	Slot() int
	Publish(ctx context.Context, dev int, off uint32, v uint32) error
	Read(ctx context.Context, side Side, dev int, off uint32, n int) ([]uint32, error)
	Close() error
}

// ErrLink is a read over a link that does not work.
var ErrLink = errors.New("pod: link down")

// Bounds of what a port may publish or read.
const (
	maxDevices   = 16
	miscRAMSize  = 0x1000
	maxReadWords = 8
)

func checkRegs(dev int, off uint32, n int) error {
	if dev < 0 || dev >= maxDevices || off%4 != 0 || off >= miscRAMSize || n < 1 || n > maxReadWords || off+4*uint32(n) > miscRAMSize {
		return fmt.Errorf("pod: bad register range dev %d off %#x n %d", dev, off, n)
	}
	return nil
}

// neighbor returns the slot across side from slot. Four nodes sit in a
// 2×2 square, right links along rows and left links along columns, which
// makes the ring 0-1-3-2; two nodes reach each other over both links.
func neighbor(size, slot int, side Side) int {
	if size == 2 || side == Right {
		return slot ^ 1
	}
	return slot ^ 2
}
