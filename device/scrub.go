package device

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// HBM scrub writes a 32-bit pattern over a whole HBM channel past the
// driver's carve-out (16 DMA engines, started by HBM_SCRUB_START and
// reaped by HBM_SCRUB_WAIT). A zero pattern returns the channel's memory
// to the host, which reads back as zeros everywhere, including the
// mappings of live chunks. Any other pattern would have to be written to
// every page of the channel (24-36 GiB); it is refused with ENOMEM.

func hbmScrubStart(r *Request) Result {
	var v ioctl.HBMScrubStart
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
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
	if v.InitVal != 0 {
		return Errno(syscall.ENOMEM)
	}
	start := a.HBMBases[v.HBMIndex] + mempool.CarveoutSize
	d.phys.inUse.Lock()
	unix.Fallocate(d.phys.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(start), int64(a.HBMBases[v.HBMIndex]+a.HBMSize-start))
	d.phys.inUse.Unlock()
	d.mu.Lock()
	d.scrubbing[v.HBMIndex] = true
	d.mu.Unlock()
	return 0
}

func hbmScrubWait(r *Request) Result {
	var v ioctl.HBMScrubWait
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
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
