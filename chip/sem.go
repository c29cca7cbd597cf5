// A core's semaphore and event area (the words the ioctls, BAR0 writes,
// DMA and mapped stores all reach). No lock guards the memory: the words
// are updated with atomic operations, as the hardware updates them.
package chip

import (
	"sync/atomic"
	"unsafe"

	"github.com/neuronfs/neuronfs/dhal"
)

// The layout of a core's event and semaphore area (its SEMAPHORE mmap
// resource and its TPB BAR0 window): events at 0, then the semaphore read
// window and the set, increment and decrement windows, each one stride.
const (
	ReadWindow   = dhal.TPBSemReadOffset - dhal.TPBEventsOffset // 0x1000
	WindowStride = 0x400
	Semaphores   = 256
	Events       = 256 // the driver accepts index 256 too (one past the end)
	AreaSize     = dhal.TPBSemaphoreArea
)

// Op is what a store to one of the windows does; its value is also the
// window's index after the read window.
type Op int

const (
	Set Op = 1
	Inc Op = 2
	Dec Op = 3
)

// windowOps are the swept windows, in window order after the read window.
var windowOps = [...]Op{Set, Inc, Dec}

// Area is one core's event and semaphore words, in device memory that
// clients may map.
type Area []byte

func (a Area) word(off uint64) *uint32 { return (*uint32)(unsafe.Pointer(&a[off])) }

// Apply performs a store of v at off: events and the read and set windows
// take the value, the increment and decrement windows add or subtract
// it. It returns the new value and, for an increment of a semaphore, its
// index (else -1).
func (a Area) Apply(off uint64, op Op, v uint32) (cur uint32, incremented int) {
	if off >= ReadWindow {
		off = ReadWindow + (off-ReadWindow)%WindowStride
	}
	w := a.word(off)
	switch op {
	case Inc:
		cur = atomic.AddUint32(w, v)
	case Dec:
		cur = atomic.AddUint32(w, -v)
	default:
		atomic.StoreUint32(w, v)
		cur = v
	}
	if op == Inc && off >= ReadWindow {
		return cur, int(off-ReadWindow) / 4
	}
	return cur, -1
}

// Semaphore reads semaphore idx.
func (a Area) Semaphore(idx int) uint32 { return atomic.LoadUint32(a.word(ReadWindow + 4*uint64(idx))) }

// Event reads event idx.
func (a Area) Event(idx int) uint32 { return atomic.LoadUint32(a.word(4 * uint64(idx))) }

// SetEvent stores event idx.
func (a Area) SetEvent(idx int, v uint32) { atomic.StoreUint32(a.word(4*uint64(idx)), v) }

// Read32 reads the register at off as the BAR0 window shows it: events
// and semaphores as stored, the set/increment/decrement windows as the
// semaphore they act on.
func (a Area) Read32(off uint64) (uint32, bool) {
	switch {
	case off%4 != 0 || off >= AreaSize:
		return 0, false
	case off < ReadWindow+4*Semaphores:
		return atomic.LoadUint32(a.word(off)), true
	}
	return atomic.LoadUint32(a.word(ReadWindow + off%WindowStride)), true
}

// OpAt is the operation a BAR0 store at off performs.
func OpAt(off uint64) Op {
	if off < ReadWindow {
		return Set // an event word
	}
	return Op((off - ReadWindow) / WindowStride)
}

// Sweep applies the stores found in the set, increment and decrement
// windows (mapped stores and DMA writes, which nothing traps): each
// non-zero word is taken (swapped to 0) and applied, and every
// application is reported to applied. Two stores to one word between
// sweeps coalesce (the later wins), and a store of 0 to the set window is
// invisible.
func (a Area) Sweep(applied func(op Op, idx int, v uint32)) {
	for _, op := range windowOps {
		base := ReadWindow + uint64(op)*WindowStride
		for i := uint64(0); i < Semaphores; i += 2 {
			// Two words per load: the windows are almost always empty.
			if atomic.LoadUint64((*uint64)(unsafe.Pointer(&a[base+4*i]))) == 0 {
				continue
			}
			for k := i; k < i+2; k++ {
				if v := atomic.SwapUint32(a.word(base+4*k), 0); v != 0 {
					a.Apply(ReadWindow+4*k, op, v)
					applied(op, int(k), v)
				}
			}
		}
	}
}
