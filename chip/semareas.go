package chip

import "github.com/neuronfs/neuronfs/dhal"

// The cores' semaphore and event areas: each an Area in the physical
// memory at the core's SEMAPHORE mmap resource, so a process that maps
// that resource reads the live values. The ioctls and BAR0 register
// writes act on it directly; stores through a mapping are applied by the
// sweeper (semsweep.go), DMA writes by the route (route.go).

// SemArea returns core nc's event and semaphore area; ok is false for a
// core the chip does not have.
func (c *Chip) SemArea(nc int) (Area, bool) {
	res, found := c.arch.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if !found {
		return nil, false
	}
	mem, ok := c.mem.Local(res.Offset, res.Size)
	return Area(mem), ok
}

// ApplySem performs a store at off in core nc's area; an increment of a
// semaphore may ring the core's exec doorbell (exec.go).
func (c *Chip) ApplySem(nc int, off uint64, op Op, v uint32) {
	a, ok := c.SemArea(nc)
	if !ok {
		return
	}
	_, idx := a.Apply(off, op, v)
	if idx >= 0 && c.onSemIncrement(nc, uint32(idx), v, false) {
		return // the doorbell wakes the engines, or runs them
	}
	c.WakeCore(nc)
}
