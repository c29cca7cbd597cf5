package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The semaphore and event commands, over the core's area: the core knows
// where its windows lie (chip/hostsem.go).

// semOps maps the write commands to the window they write.
var semOps = map[uint32]chip.Op{
	ioctl.CmdSemaphoreWrite:     chip.Set,
	ioctl.CmdSemaphoreIncrement: chip.Inc,
	ioctl.CmdSemaphoreDecrement: chip.Dec,
}

func semaphoreOp(r *Request, v *ioctl.Semaphore) Result {
	s := r.Sys()
	if res := validCore(s, v.NCID); res != 0 {
		return res
	}
	idx := int(uint16(v.SemaphoreIndex))
	if idx >= chip.Semaphores {
		return Errno(syscall.EINVAL)
	}
	core := r.Dev().chip.Core(int(v.NCID))
	if op, ok := semOps[r.Cmd]; ok {
		core.WriteSemaphore(op, idx, v.Value)
		r.Dev().chip.Restage() // a doorbell: what its queues wait for may be staged by now (stores through a mapping)
		return 0
	}
	val, ok := core.ReadSemaphore(idx)
	if !ok {
		return Errno(syscall.EINVAL)
	}
	v.Value = val
	return copyOut(r, r.Arg, v)
}

// eventOp: the driver does not check the core (it truncates it to 8 bits
// and computes a register address); a core the device lacks reads 0 and
// ignores writes here.
func eventOp(r *Request, v *ioctl.Event) Result {
	idx := int(uint16(v.EventIndex))
	if idx > chip.Events {
		return Errno(syscall.EINVAL)
	}
	core := r.Dev().chip.Core(int(uint8(v.NCID)))
	switch {
	case r.Cmd != ioctl.CmdEventGet:
		if core != nil {
			core.WriteEvent(idx, v.Value)
		}
		return 0
	case core != nil:
		v.Value = core.ReadEvent(idx)
	default:
		v.Value = 0
	}
	return copyOut(r, r.Arg, v)
}
