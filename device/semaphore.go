package device

import (
	"encoding/binary"
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Semaphores and events of each core. Their values live in the device's
// physical memory at the core's SEMAPHORE mmap resource (events at +0,
// the semaphore read window at +0x1000), so a process that maps that
// resource reads the live values. Writes through such a mapping are plain
// memory: the set/increment/decrement windows do no arithmetic there.

const (
	semReadWindow = dhal.TPBSemReadOffset - dhal.TPBEventsOffset // 0x1000
	semCount      = 256
	eventCount    = 256 // the driver accepts index 256 too (one past the end)
)

// semWindow maps core nc's event and semaphore area; ok is false for a
// core the device does not have.
func (d *Device) semWindow(nc int) (mem []byte, done func(), ok bool) {
	res, found := d.sys.Arch.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if !found {
		return nil, nil, false
	}
	d.phys.inUse.RLock()
	v, err := d.phys.view(res.Offset&^0xfff, res.Offset&0xfff+res.Size)
	if err != nil {
		d.phys.inUse.RUnlock()
		return nil, nil, false
	}
	return v[res.Offset&0xfff:], d.phys.inUse.RUnlock, true
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
	mem, done, ok := d.semWindow(int(v.NCID))
	if !ok {
		return Errno(syscall.EINVAL)
	}
	word := mem[semReadWindow+4*int(idx):]
	d.mu.Lock()
	cur := binary.LittleEndian.Uint32(word)
	switch r.Cmd {
	case ioctl.CmdSemaphoreRead:
		v.Value = cur
	case ioctl.CmdSemaphoreWrite:
		binary.LittleEndian.PutUint32(word, v.Value)
	case ioctl.CmdSemaphoreIncrement:
		binary.LittleEndian.PutUint32(word, cur+v.Value)
	case ioctl.CmdSemaphoreDecrement:
		binary.LittleEndian.PutUint32(word, cur-v.Value)
	}
	d.mu.Unlock()
	done()
	if r.Cmd == ioctl.CmdSemaphoreRead {
		return copyOut(r, r.Arg, &v)
	}
	return 0
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
	var done func()
	ok := false
	if nc < d.sys.Arch.CoresPerDevice {
		mem, done, ok = d.semWindow(nc)
	}
	if ok {
		word := mem[4*int(idx):]
		d.mu.Lock()
		if r.Cmd == ioctl.CmdEventGet {
			v.Value = binary.LittleEndian.Uint32(word)
		} else {
			binary.LittleEndian.PutUint32(word, v.Value)
		}
		d.mu.Unlock()
		done()
	} else if r.Cmd == ioctl.CmdEventGet {
		v.Value = 0
	}
	if r.Cmd == ioctl.CmdEventGet {
		return copyOut(r, r.Arg, &v)
	}
	return 0
}
