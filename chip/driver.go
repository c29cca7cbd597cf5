package chip

// Driver is all the chip reaches of the driver that owns it: the memory
// the daemon admits and accounts, the allocations a program may run in,
// the queues the runtime left to the device, its neighbours, the fault
// switches and the counters. The chip calls it with none of its own locks
// held, so an implementation may take the driver's.
type Driver interface {
	// Admit reports whether a write may make the backing hold
	// [pa, pa+n) (the daemon's memory limit), reserving it if so.
	Admit(pa, n uint64) bool
	// Touched counts n bytes of physical memory an engine reached.
	Touched(n uint64)
	// Allocation returns the allocation holding pa, as [base, base+size).
	Allocation(pa uint64) (base, size uint64, ok bool)
	// DeviceDrivenQueues lists the (engine, queue) pairs of core nc's
	// engines that a process initialised and never rang itself: what the
	// core's doorbell arms; a fresh slice, which the core filters in place.
	DeviceDrivenQueues(nc int) [][2]int
	// Peer is the chip at the other end of neighbour link link, or nil.
	Peer(link int) *Chip
	// HostOwner is the chip whose host memory holds host address pa
	// (route bit set), or nil.
	HostOwner(pa uint64) *Chip
	// Count adds n to core nc's counter name (the driver's sysfs
	// counters, e.g. "status/hw_dma_abort_error").
	Count(nc int, name string, n uint64)
	// Faults are the injected-failure switches.
	Faults() Faults
}

// Faults are the chip's fault hooks: each is asked at the moment the
// hardware would fail.
type Faults struct {
	DMA          func() (stall bool, abort uint32) // every engine step
	ResetFail    func() bool                       // a firmware reset
	FWIOFail     func() bool                       // a firmware request
	PowerInvalid func() bool                       // a power sample
}
