package device

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Semaphores and events of each core. Their values live in the device's
// physical memory at the core's SEMAPHORE mmap resource (events at +0,
// the semaphore read window at +0x1000), so a process that maps that
// resource reads the live values. The ioctls and BAR0 register writes
// perform the set/increment/decrement arithmetic with atomic operations on
// those words, as the chip does, so no lock is involved; stores through a
// mapping are applied by the sweeper (semsweep.go).

const (
	semReadWindow = dhal.TPBSemReadOffset - dhal.TPBEventsOffset // 0x1000
	semCount      = 256
	eventCount    = 256 // the driver accepts index 256 too (one past the end)
)

// semWindow returns core nc's event and semaphore area; ok is false for a
// core the device does not have. The memory stays mapped for the device's
// life.
func (d *Device) semWindow(nc int) (mem []byte, ok bool) {
	res, found := d.sys.Arch.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if !found {
		return nil, false
	}
	return d.dma.mem.Local(res.Offset, res.Size)
}

// word32 is the 32-bit word at b[0:4], for atomic access.
func word32(b []byte) *uint32 { return (*uint32)(unsafe.Pointer(&b[0])) }

// semOp is what a write to one of the semaphore windows does; the value
// is also the window's index after the read window.
type semOp int

const (
	semSetOp semOp = 1
	semIncOp semOp = 2
	semDecOp semOp = 3
)

const semWindowStride = 0x400

// applySem performs a register write at off in core nc's event and
// semaphore area: events and the read and set windows store the value,
// the increment and decrement windows add or subtract it. An increment
// may ring the core's exec doorbell (exec.go). It returns the new value.
func (d *Device) applySem(nc int, off uint64, op semOp, v uint32) uint32 {
	mem, ok := d.semWindow(nc)
	if !ok {
		return 0
	}
	if off >= semReadWindow {
		off = semReadWindow + (off-semReadWindow)%semWindowStride
	}
	w := word32(mem[off : off+4])
	var cur uint32
	switch op {
	case semIncOp:
		cur = atomic.AddUint32(w, v)
	case semDecOp:
		cur = atomic.AddUint32(w, -v)
	default:
		atomic.StoreUint32(w, v)
		cur = v
	}
	if op == semIncOp && off >= semReadWindow {
		d.onSemIncrement(nc, uint32(off-semReadWindow)/4, v)
	}
	return cur
}

// semOps maps the write commands to the window they write.
var semOps = map[uint32]semOp{
	ioctl.CmdSemaphoreWrite:     semSetOp,
	ioctl.CmdSemaphoreIncrement: semIncOp,
	ioctl.CmdSemaphoreDecrement: semDecOp,
}

func semaphoreOp(r *Request) Result {
	var v ioctl.Semaphore
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
	s := r.Sys()
	if res := validCore(s, v.NCID); res != 0 {
		return res
	}
	idx := uint16(v.SemaphoreIndex)
	if idx >= semCount {
		return Errno(syscall.EINVAL)
	}
	d := r.Dev()
	d.sweepSemaphores(int(v.NCID))
	if op, ok := semOps[r.Cmd]; ok {
		d.applySem(int(v.NCID), semReadWindow+uint64(op)*semWindowStride+4*uint64(idx), op, v.Value)
		return 0
	}
	mem, ok := d.semWindow(int(v.NCID))
	if !ok {
		return Errno(syscall.EINVAL)
	}
	v.Value = atomic.LoadUint32(word32(mem[semReadWindow+4*int(idx):]))
	return copyOut(r, r.Arg, &v)
}

// eventOp: the driver does not check the core (it truncates it to 8 bits
// and computes a register address); a core the device lacks reads 0 and
// ignores writes here.
func eventOp(r *Request) Result {
	var v ioctl.Event
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
	idx := uint16(v.EventIndex)
	if idx > eventCount {
		return Errno(syscall.EINVAL)
	}
	d := r.Dev()
	nc := int(uint8(v.NCID))
	var mem []byte
	ok := false
	if nc < d.sys.Arch.CoresPerDevice {
		mem, ok = d.semWindow(nc)
	}
	if ok {
		word := word32(mem[4*int(idx):])
		if r.Cmd == ioctl.CmdEventGet {
			v.Value = atomic.LoadUint32(word)
		} else {
			atomic.StoreUint32(word, v.Value)
		}
	} else if r.Cmd == ioctl.CmdEventGet {
		v.Value = 0
	}
	if r.Cmd == ioctl.CmdEventGet {
		return copyOut(r, r.Arg, &v)
	}
	return 0
}
