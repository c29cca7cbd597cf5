package runtime

import (
	"fmt"
	"slices"

	"github.com/neuronfs/neuronfs/dhal"
)

// Addresses for device-to-device DMA: a descriptor of this device's
// queues reaches a connected device through a neighbour window (the
// convention is pinned in dhal/route.go), and a semaphore by the SoC
// address of its window.

// Link returns the neighbour window that leads to device peer: its
// position in this device's connected_devices.
func (d *Device) Link(peer int) (int, error) {
	nb, err := d.ConnectedDevices()
	if err != nil {
		return 0, err
	}
	k := slices.Index(nb, uint32(peer))
	if k < 0 {
		return 0, fmt.Errorf("device %d is not connected to this one (%v)", peer, nb)
	}
	return k, nil
}

// PeerAddress is the address this device's engines use for address local
// of the device at the other end of neighbour window link.
func (d *Device) PeerAddress(link int, local uint64) (uint64, error) {
	f, err := d.facts()
	if err != nil {
		return 0, err
	}
	a, ok := f.PeerAddress(link, local)
	if !ok {
		return 0, fmt.Errorf("%v has no neighbour window %d", f.Arch, link)
	}
	return a, nil
}

// Semaphore windows a DMA write acts through.
const (
	SemSet = dhal.TPBSemSetOffset
	SemInc = dhal.TPBSemIncOffset
	SemDec = dhal.TPBSemDecOffset
)

// SemaphoreAddress is the SoC address of semaphore idx of core nc in
// window (SemSet, SemInc or SemDec): 4 bytes written there by DMA store,
// add or subtract their value.
func (d *Device) SemaphoreAddress(nc, idx uint32, window uint64) (uint64, error) {
	f, err := d.facts()
	if err != nil {
		return 0, err
	}
	base := f.TPBSoCBase(int(nc))
	if base == dhal.InvalidOffset || idx >= uint32(f.SemaphoresPerCore) {
		return 0, fmt.Errorf("no semaphore %d on core %d", idx, nc)
	}
	return base + window + 4*uint64(idx), nil
}
