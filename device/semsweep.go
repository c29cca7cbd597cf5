package device

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// Stores through a mapping of a core's SEMAPHORE resource are not trapped,
// so the set, increment and decrement windows are swept: a non-zero word
// found there is taken (swapped to 0) and applied as the chip would have
// applied the store. Sweeps run every semSweepInterval on the devices
// some process has open, and for a core before every semaphore ioctl and
// BAR0 access to its area, so
// an ioctl read after a mapped store sees it. Two stores to one window
// word between sweeps coalesce (the later wins), and a store of 0 to the
// set window is invisible. DMA writes into the windows are swept alike.

const semSweepInterval = 5 * time.Millisecond

// windowOps are the swept windows in window order after the read window.
var windowOps = []semOp{semSetOp, semIncOp, semDecOp}

// sweepSemaphores applies pending window stores of core nc.
func (d *Device) sweepSemaphores(nc int) {
	mem, ok := d.semWindow(nc)
	if !ok {
		return
	}
	for _, op := range windowOps {
		base := semReadWindow + uint64(op)*semWindowStride
		for i := uint64(0); i < semCount; i += 2 {
			// Two words per load: the windows are almost always empty.
			if atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[base+4*i]))) == 0 {
				continue
			}
			for k := i; k < i+2; k++ {
				if v := atomic.SwapUint32(word32(mem[base+4*k:]), 0); v != 0 {
					d.applySem(nc, semReadWindow+4*k, op, v)
				}
			}
		}
	}
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
