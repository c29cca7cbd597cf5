package device

import (
	"context"
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// UserMemory reads and writes the calling process's address space, the way
// copy_from_user/copy_to_user do: a short count means a fault part way.
type UserMemory interface {
	ReadAt(p []byte, addr uint64) (int, error)
	WriteAt(p []byte, addr uint64) (int, error)
}

// UserMapping is a mapping of a device node in a process, as
// /proc/<pid>/maps shows it.
type UserMapping struct {
	Device        int    // the node's device index
	Start, Length uint64 // the virtual range
	Offset        uint64 // the file offset: the physical address mapped
}

// MapLookup finds the mapping of a device node that holds va in process
// tgid. The driver records its own mmaps; a transport that never sees
// mmap reads the process's memory map instead.
type MapLookup interface {
	MappingAt(tgid int32, va uint64) (UserMapping, bool)
}

// Caller identifies the task that issued a request.
type Caller struct {
	Tid  int32
	Tgid int32 // the driver keys everything by tgid
	// FatalSignalPending reports whether SIGTERM or SIGKILL is pending for
	// the caller: the driver's waits end only for those, while a FUSE
	// interrupt comes for any signal.
	FatalSignalPending func() bool
	// Live says the tgid is a process of this host that the transport saw
	// (not a test's made-up id): the system watches it for its exit.
	Live bool
	// Gone, when not nil, is closed once no answer can reach the caller
	// any more: its call was withdrawn (a caller under the seccomp
	// supervisor waits killably, unlike a FUSE caller). Every wait of the
	// driver ends then, as at its budget or a fatal signal.
	Gone <-chan struct{}
}

func (c Caller) fatal() bool {
	if c.gone() {
		return true
	}
	return c.FatalSignalPending != nil && c.FatalSignalPending()
}

// gone reports whether Gone is closed.
func (c Caller) gone() bool {
	select {
	case <-c.Gone:
		return true
	default:
		return false
	}
}

// Request is one ioctl as a handler sees it.
type Request struct {
	Ctx    context.Context
	File   *File
	Cmd    uint32 // the raw command value, as the caller passed it
	Arg    uint64 // the caller's argument (a user address for most commands)
	Caller Caller
	Mem    UserMemory
	// Maps finds the caller's mappings of device nodes (nil: none known).
	Maps MapLookup
	// In holds the _IOC_SIZE bytes the kernel already copied in for
	// _IOC_WRITE commands (nil otherwise): reading them costs nothing.
	In []byte
}

// Dev returns the device the request targets.
func (r *Request) Dev() *Device { return r.File.Dev }

// Sys returns the emulated host.
func (r *Request) Sys() *System { return r.File.Dev.sys }

// Result is what a handler returns: a non-negative value passed to the
// caller as ioctl()'s return, or a negative errno.
type Result int64

// Errno makes a Result from an errno.
func Errno(e syscall.Errno) Result { return -Result(e) }

// notCopied is the positive "bytes not copied" count the driver returns
// when a user copy faults.
func notCopied(want, got int) Result { return Result(want - got) }

// copyIn fills v from user memory at addr. It returns 0, or what the
// driver answers a fault: its positive not-copied count, or EFAULT from
// driver 2.29.
func copyIn[T any](r *Request, addr uint64, v *T) Result {
	b := ioctl.Bytes(v)
	if addr == r.Arg && len(r.In) >= len(b) {
		copy(b, r.In)
		return 0
	}
	return r.readUser(b, addr)
}

// readUser copies user memory at addr into b, with copyIn's result.
func (r *Request) readUser(b []byte, addr uint64) Result {
	n, _ := r.Mem.ReadAt(b, addr)
	if n < len(b) {
		if r.Sys().quirks.CopyInEFAULT {
			return Errno(syscall.EFAULT)
		}
		return notCopied(len(b), n)
	}
	return 0
}

// copyOut writes v to user memory at addr, with copyIn's result convention.
func copyOut[T any](r *Request, addr uint64, v *T) Result {
	return copyOutBytes(r, addr, ioctl.Bytes(v))
}

func copyOutBytes(r *Request, addr uint64, b []byte) Result {
	n, _ := r.Mem.WriteAt(b, addr)
	if n < len(b) {
		return notCopied(len(b), n)
	}
	return 0
}
