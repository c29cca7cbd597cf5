package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The semaphore and event commands, over the chip's areas (chip/semareas.go).

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
	idx := uint16(v.SemaphoreIndex)
	if idx >= chip.Semaphores {
		return Errno(syscall.EINVAL)
	}
	d := r.Dev()
	d.chip.SweepCore(int(v.NCID))
	if op, ok := semOps[r.Cmd]; ok {
		d.chip.ApplySem(int(v.NCID), chip.ReadWindow+uint64(op)*chip.WindowStride+4*uint64(idx), op, v.Value)
		return 0
	}
	a, ok := d.chip.SemArea(int(v.NCID))
	if !ok {
		return Errno(syscall.EINVAL)
	}
	v.Value = a.Semaphore(int(idx))
	return copyOut(r, r.Arg, v)
}

// eventOp: the driver does not check the core (it truncates it to 8 bits
// and computes a register address); a core the device lacks reads 0 and
// ignores writes here.
func eventOp(r *Request, v *ioctl.Event) Result {
	idx := uint16(v.EventIndex)
	if idx > chip.Events {
		return Errno(syscall.EINVAL)
	}
	d := r.Dev()
	nc := int(uint8(v.NCID))
	var a chip.Area
	ok := false
	if nc < d.sys.Arch.CoresPerDevice {
		a, ok = d.chip.SemArea(nc)
	}
	if ok {
		if r.Cmd == ioctl.CmdEventGet {
			v.Value = a.Event(int(idx))
		} else {
			a.SetEvent(int(idx), v.Value)
			d.chip.WakeCore(nc)
		}
	} else if r.Cmd == ioctl.CmdEventGet {
		v.Value = 0
	}
	if r.Cmd == ioctl.CmdEventGet {
		return copyOut(r, r.Arg, v)
	}
	return 0
}
