package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// dmabufFD: a FUSE daemon cannot create a dma-buf in the caller, so the
// device answers as the driver built for a kernel without dma-buf export
// (< 5.15) does, after reading the request.
func dmabufFD(r *Request, v *ioctl.DMABufFD) Result {
	// Driver 2.29 checks the request first.
	if r.Sys().quirks.DMABufChecks && (v.FD == 0 || v.VA%pageSize != 0) {
		return Errno(syscall.EINVAL)
	}
	return Errno(syscall.EPROTONOSUPPORT)
}

// dmabufFDV2 (driver 2.29) also wants somewhere to put the offset of va
// in the buffer; like DMABUF_FD it cannot export one here.
func dmabufFDV2(r *Request, v *ioctl.DMABufFDV2) Result {
	if v.FD == 0 || v.Offset == 0 {
		return Errno(syscall.EINVAL)
	}
	return Errno(syscall.EPROTONOSUPPORT)
}

const pageSize = 4096
