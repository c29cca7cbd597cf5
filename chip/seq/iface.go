package seq

import "fmt"

// Engine is one of a core's five record-executing engines, in the order
// the exec request and the INFER_STATUS queues use.
type Engine uint8

const (
	PE Engine = iota
	ACT
	POOL
	DVE
	SP
	NumEngines = 5
)

var engineNames = [NumEngines]string{"PE", "ACT", "POOL", "DVE", "SP"}

func (e Engine) String() string {
	if e < NumEngines {
		return engineNames[e]
	}
	return fmt.Sprintf("engine%d", uint8(e))
}

// Memory is where an engine fetches its records: device memory, read by
// address.
type Memory interface {
	// Fetch copies the 64-byte record at device address addr into r.
	Fetch(addr uint64, r *Record) error
}

// Sync is a core's semaphores and events as its engines see them. The
// core implements it over the same words the ioctls, BAR0 and DMA reach;
// updates made through it come from a program and must never count as a
// host doorbell.
//
// Changed is how a sequencer waits without a lock: it takes the channel,
// checks its predicate again, and only then blocks on the channel, so a
// change made between the check and the block is never missed. Every
// change of a semaphore or event made after Changed returned must close
// the channel it returned. A Waker does exactly that; a core may instead
// keep a closed-on-change channel under a lock of its own, as long as
// the lock is released before Changed returns.
type Sync interface {
	Semaphore(idx uint8) uint32
	UpdateSemaphore(idx uint8, op SemOp, v uint32)
	Event(idx uint8) bool
	// SetEvent stores state; CompareAndSetEvent stores new only if the
	// event is old, and reports whether it did (a wait-then-clear takes
	// the event once even when two engines wait for it).
	SetEvent(idx uint8, state bool)
	CompareAndSetEvent(idx uint8, old, new bool) bool
	Changed() <-chan struct{}
}

// CSR is the core's register space as its engines write it (CTRL_WR).
// A write to a DMA queue's tail-increment register is what starts that
// queue; the implementation may start it later, but must not block on
// anything an engine of this core has to do first. An error stops the
// engine with the error in its fault.
type CSR interface {
	WriteCSR(e Engine, addr uint64, v uint32, size uint8) error
}

// CSRNamer is a CSR that can name its registers for a trace ("dma 3 q2
// tx tail"); "" for one without a name.
type CSRNamer interface {
	NameCSR(addr uint64) string
}

// NotifyKind says which record a notification asks for.
type NotifyKind uint8

const (
	// NotifyExplicit is a NOTIFY record: an EXPLICIT record with its
	// debug_hint and debug_hint_extended into the engine's INFER_STATUS
	// queue.
	NotifyExplicit NotifyKind = iota + 1
	// NotifyDebug is a record's debug_cmd (NOTIFY, START, END,
	// START_END): a trace record around that record.
	NotifyDebug
	// NotifyError is a fault: a TPB_ERROR record into the core's ERROR
	// queue; the engine has stopped.
	NotifyError
)

// Notification is one record an engine asks its core to write.
type Notification struct {
	Kind     NotifyKind
	Engine   Engine
	PC       uint64 // the record's device address
	Hint     uint8  // debug_hint
	HintExt  uint16 // debug_hint_extended (NotifyExplicit)
	DebugCmd DebugCmd
	ErrorID  uint8  // NotifyError
	Fault    *Fault // NotifyError
}
