package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// resourceMmapInfo answers where a special resource (semaphores, SBUF,
// a TOP_SP window, a whole HBM stack) is mapped and how long the mapping
// must be.
func resourceMmapInfo(r *Request, v *ioctl.ResourceMmapInfo) Result {
	res, ok := r.Sys().Arch.LookupMmapResource(dhal.MmapBlock(v.Block), v.BlockID, dhal.MmapResourceKind(v.Resource))
	if !ok {
		return Errno(syscall.EINVAL)
	}
	v.Offset, v.Size = res.Offset, res.Size
	return copyOut(r, r.Arg, v)
}
