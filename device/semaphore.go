package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Semaphores and events of each core: a chip.Area in the device's
// physical memory at the core's SEMAPHORE mmap resource, so a process
// that maps that resource reads the live values. The ioctls and BAR0
// register writes act on it directly; stores through a mapping are
// applied by the sweeper (semsweep.go).

// semArea returns core nc's event and semaphore area; ok is false for a
// core the device does not have.
func (d *Device) semArea(nc int) (chip.Area, bool) {
	res, found := d.sys.Arch.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if !found {
		return nil, false
	}
	mem, ok := d.dma.mem.Local(res.Offset, res.Size)
	return chip.Area(mem), ok
}

// applySem performs a store at off in core nc's area; an increment of a
// semaphore may ring the core's exec doorbell (exec.go).
func (d *Device) applySem(nc int, off uint64, op chip.Op, v uint32) {
	a, ok := d.semArea(nc)
	if !ok {
		return
	}
	_, idx := a.Apply(off, op, v)
	d.wakeCore(nc)
	if idx >= 0 {
		d.onSemIncrement(nc, uint32(idx), v, false)
	}
}

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
	d.sweepSemaphores(int(v.NCID))
	if op, ok := semOps[r.Cmd]; ok {
		d.applySem(int(v.NCID), chip.ReadWindow+uint64(op)*chip.WindowStride+4*uint64(idx), op, v.Value)
		return 0
	}
	a, ok := d.semArea(int(v.NCID))
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
		a, ok = d.semArea(nc)
	}
	if ok {
		if r.Cmd == ioctl.CmdEventGet {
			v.Value = a.Event(int(idx))
		} else {
			a.SetEvent(int(idx), v.Value)
			d.wakeCore(nc)
		}
	} else if r.Cmd == ioctl.CmdEventGet {
		v.Value = 0
	}
	if r.Cmd == ioctl.CmdEventGet {
		return copyOut(r, r.Arg, v)
	}
	return 0
}
