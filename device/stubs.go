package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// returnZero: DEVICE_INIT, DEVICE_RELEASE, DMA_ENG_INIT, DMA_QUEUE_RELEASE
// and NOTIFICATIONS_DESTROY_V1 do nothing in the driver and return 0.
func returnZero(*Request) Result { return 0 }

// returnMinusOne: NOTIFICATIONS_QUEUE_INFO was never implemented; the
// driver returns -1, which user space sees as EPERM.
func returnMinusOne(*Request) Result { return Errno(syscall.EPERM) }

// noIoctlCmd: DMA_QUIESCE_QUEUES is "no longer supported" (-ENOIOCTLCMD,
// which the VFS turns into ENOTTY).
func noIoctlCmd(*Request) Result { return Errno(ioctl.ENOIOCTLCMD) }

// deviceResetStatus always reports the byte 1.
func deviceResetStatus(r *Request) Result {
	one := uint8(1)
	return copyOut(r, r.Arg, &one)
}
