package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// programEngine serves PROGRAM_ENGINE and _IOC_NR 105 (PROGRAM_ENGINE_NC,
// _NC64): it copies buffer+offset to dst+offset, a destination the
// architecture's whitelist must contain, through a host bounce buffer and
// a synchronous DMA. The bounce buffer is as large as the copy: a size
// the driver could not allocate (0, or beyond kmalloc's limit) is ENOMEM,
// and so is a core beyond the driver's eight.
func programEngine(r *Request, v *ioctl.ProgramEngine) Result {
	return program(r, 0, v.Dst, v.Buffer, uint64(v.Size), uint64(v.Offset))
}

func programEngineNC(r *Request, v *ioctl.ProgramEngineNC) Result {
	return program(r, v.NCID, v.Dst, v.Buffer, uint64(v.Size), uint64(v.Offset))
}

func programEngineNC64(r *Request, v *ioctl.ProgramEngineNC64) Result {
	return program(r, v.NCID, v.Dst, v.Buffer, v.Size, v.Offset)
}

func program(r *Request, nc uint32, dst, buf, size, off uint64) Result {
	d := r.Dev()
	if !d.sys.Arch.ProgramRegion(dst+off, size) || dst+off < dst {
		return Errno(syscall.ENOMEM)
	}
	if size == 0 || size > kmallocMax || nc >= dhal.MaxCoresPerDevice {
		return Errno(syscall.ENOMEM)
	}
	bounce := make([]byte, size)
	if res := r.readUser(bounce, buf+off); res != 0 {
		return res
	}
	to, ok := d.chip.Mem().SliceWrite(dst+off, size)
	if !ok {
		return Errno(syscall.EPERM) // the DMA failed
	}
	copy(to, bounce)
	return 0
}
