package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// dmabufFD: a FUSE daemon cannot create a dma-buf in the caller, so the
// device answers as the driver built for a kernel without dma-buf export
// (< 5.15) does, after reading the request.
func dmabufFD(r *Request, v *ioctl.DMABufFD) Result {
	return Errno(syscall.EPROTONOSUPPORT)
}
