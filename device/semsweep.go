package device

import (
	"time"

	"github.com/neuronfs/neuronfs/chip"
)

// Stores through a mapping of a core's SEMAPHORE resource (and DMA
// writes into it) are not trapped: the set, increment and decrement
// windows are swept (chip.Area.Sweep) every semSweepInterval on the
// devices some process has open, and for a core before every semaphore
// ioctl and BAR0 access to its area, so an ioctl read after a mapped
// store sees it.

const semSweepInterval = 5 * time.Millisecond

// sweepSemaphores applies pending window stores of core nc; increments
// may ring the core's exec doorbell.
func (d *Device) sweepSemaphores(nc int) {
	a, ok := d.semArea(nc)
	if !ok {
		return
	}
	a.Sweep(func(op chip.Op, idx int, v uint32) {
		if op == chip.Inc {
			d.onSemIncrement(nc, uint32(idx), v, false)
		}
	})
}

// semSweeper sweeps every core of every device until stop closes.
func (s *System) semSweeper(stop <-chan struct{}) {
	t := time.NewTicker(semSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, d := range s.Devices {
			// A mapping holds its file open, and queues die with their
			// owner: a device nobody has open has nothing to sweep.
			if d.OpenCount() == 0 {
				continue
			}
			for c := range s.Arch.CoresPerDevice {
				d.sweepSemaphores(c)
			}
		}
	}
}
