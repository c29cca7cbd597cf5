package chip

// The host's stores to a core's semaphore and event area: each an Area in
// the physical memory at the core's SEMAPHORE mmap resource, so a process
// that maps that resource reads the live values. The ioctls and BAR0
// register writes act on it here; stores through a mapping are applied by
// the sweeper (semsweep.go), DMA writes by the route (route.go).

// Apply performs a store at off in the core's area; an increment of a
// semaphore may ring the core's exec doorbell (doorbell.go).
func (c *Core) Apply(off uint64, op Op, v uint32) {
	a, ok := c.Area()
	if !ok {
		return
	}
	_, idx := a.Apply(off, op, v)
	if idx >= 0 && c.onSemIncrement(uint32(idx), v, false) {
		return // the doorbell wakes the engines, or runs them
	}
	c.Wake()
}

// WriteSemaphore is the host's store of v to semaphore idx through the
// window of op (SEMAPHORE_WRITE, _INCREMENT, _DECREMENT); it first
// applies what mappings stored, so the order of the two holds.
func (c *Core) WriteSemaphore(op Op, idx int, v uint32) {
	c.Sweep()
	c.Apply(ReadWindow+uint64(op)*WindowStride+4*uint64(idx), op, v)
}

// ReadSemaphore is the host's read of semaphore idx, after what mappings
// stored; ok is false when the area cannot be reached.
func (c *Core) ReadSemaphore(idx int) (v uint32, ok bool) {
	c.Sweep()
	a, ok := c.Area()
	if !ok {
		return 0, false
	}
	return a.Semaphore(idx), true
}

// ReadEvent is the host's read of event idx (0 when the area cannot be
// reached).
func (c *Core) ReadEvent(idx int) uint32 {
	a, ok := c.Area()
	if !ok {
		return 0
	}
	return a.Event(idx)
}

// WriteEvent is the host's store of v to event idx (EVENT_SET): it wakes
// the engines that wait for it.
func (c *Core) WriteEvent(idx int, v uint32) {
	a, ok := c.Area()
	if !ok {
		return
	}
	a.SetEvent(idx, v)
	c.Wake()
}

// dmaWrite is an engine's write of b at off in the core's area. The
// doorbell it may ring is served in a goroutine: the engine goes on with
// its queue, as the chip's would.
func (c *Core) dmaWrite(off uint64, b []byte) {
	a, ok := c.Area()
	if !ok {
		return
	}
	applyWords(a, off, b, func(idx int, v uint32) { c.onSemIncrement(uint32(idx), v, true) })
	c.Wake()
}
