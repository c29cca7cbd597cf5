package device

import (
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device/mempool"
)

// FUSE never sees mmap: with passthrough the kernel maps the device's
// memfd directly. Where something can see it (the seccomp supervisor of
// `neuronfs run`), it asks CheckMapping how the driver's mmap handler
// would treat the request.

// Mapping describes one mmap of a device node.
type Mapping struct {
	Tgid           int32
	Offset, Length uint64
	Write          bool // PROT_WRITE asked for
	RawIO          bool // the caller has CAP_SYS_RAWIO
}

// CheckMapping answers 0 for a mapping the driver makes, or its errno.
// The driver maps another process's chunk (unless it has device lifespan)
// and the whole-block special resources without write permission; the
// emulation cannot take write permission away from a mapping, so by
// default it lets such a mapping through writable, and in strict mode it
// refuses it with EACCES and logs it.
func (d *Device) CheckMapping(m Mapping) syscall.Errno {
	readOnly, owner, errno := d.mappingRule(m)
	if errno != 0 || !readOnly || !m.Write {
		return errno
	}
	fields := logrus.Fields{"offset": m.Offset, "length": m.Length, "caller": m.Tgid, "owner": owner}
	if d.sys.strict {
		d.log.WithFields(fields).Warn("strict: writable mapping of memory the driver maps read-only refused")
		return syscall.EACCES
	}
	d.log.WithFields(fields).Debug("writable mapping of memory the driver maps read-only")
	return 0
}

// mappingRule is the driver's decision: a chunk holding the offset whose
// size is the length (a contiguous scratchpad may run on to the end of
// its pool), else a special resource matching offset and length exactly,
// else a raw mapping of device memory for CAP_SYS_RAWIO only.
func (d *Device) mappingRule(m Mapping) (readOnly bool, owner int32, errno syscall.Errno) {
	if c, ok := d.mem.pool.Containing(m.Offset); ok && chunkMapsAs(c, m.Length) {
		return c.PID != m.Tgid && c.Lifespan != mempool.LifespanDevice, c.PID, 0
	}
	for _, r := range d.sys.Arch.MmapResources() {
		if r.Offset == m.Offset && r.Size == m.Length {
			return r.ReadOnly, 0, 0
		}
	}
	if !m.RawIO {
		return false, 0, syscall.EPERM
	}
	return false, 0, 0
}

func chunkMapsAs(c *mempool.Chunk, length uint64) bool {
	if c.IsScratchpad() {
		return c.PA+length <= c.MainPoolEnd()
	}
	return c.Size == length
}
