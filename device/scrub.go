package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// HBM scrub writes a 32-bit pattern over a whole HBM channel past the
// driver's carve-out (16 DMA engines, started by HBM_SCRUB_START and
// reaped by HBM_SCRUB_WAIT), live chunks included. The channel's memory
// goes back to the host; a zero pattern then reads as zeros everywhere,
// and any other is written into live chunks at once and into the rest of
// the channel block by block as it is first reached (hbmPattern).

func hbmScrubStart(r *Request, v *ioctl.HBMScrubStart) Result {
	d := r.Dev()
	a := d.sys.Arch
	if int(v.HBMIndex) >= a.HBMChannels {
		return Errno(syscall.EPERM) // the driver's -1
	}
	if !d.IsAttached(r.Caller.Tgid) {
		// The driver allocates process memory for an unattached caller
		// and trips a BUG_ON; here the caller is refused instead.
		return Errno(syscall.EACCES)
	}
	ch := int(v.HBMIndex)
	start := a.HBMBases[ch] + mempool.CarveoutSize
	size := a.HBMBases[ch] + a.HBMSize - start
	// The channel's memory goes back to the host and the pattern is
	// recorded, then live chunks get it at once. A chunk freed meanwhile
	// cannot be pinned and does not get memory back.
	d.chip.Scrub(ch, start, size, v.InitVal)
	for _, c := range d.mem.pool.DeviceChunks(ch) {
		if d.mem.pool.Pin(c) {
			d.chip.Fill(c.PA, c.Size)
			d.mem.unpin(c)
		}
	}
	d.mu.Lock()
	d.scrubbing[v.HBMIndex] = true
	d.mu.Unlock()
	return 0
}

func hbmScrubWait(r *Request, v *ioctl.HBMScrubWait) Result {
	d := r.Dev()
	if int(v.HBMIndex) >= d.sys.Arch.HBMChannels {
		return Errno(syscall.EPERM)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.scrubbing[v.HBMIndex] {
		return Errno(syscall.EPERM) // "scrub context corrupted"
	}
	d.scrubbing[v.HBMIndex] = false
	return 0
}
