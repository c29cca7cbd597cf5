package fs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// callerMemory reads and writes a client's address space, the way the
// driver uses copy_from_user and copy_to_user: the kernel's restricted
// FUSE ioctl only copies _IOC_SIZE bytes, while Neuron commands pass
// larger structs and nested pointers.
//
// A FUSE caller is reached by its thread id (process_vm_readv/writev):
// the id cannot change hands while the request is served, since a task
// whose request the daemon has read waits for the reply uninterruptibly,
// even when killed (the kernel's request_wait_answer; go-fuse sees only
// an INTERRUPT, which ends no wait the daemon does not end itself), so
// the task stays alive and keeps its id until the reply.
//
// A caller under the seccomp supervisor waits killably: it can die
// mid-call and its id go to a new task. Its memory is reached through an
// open of its /proc/TID/mem the supervisor made while its call was live
// (chardev.Task.Mem), which keeps naming the dead caller's address space
// (every access then fails) instead of the id's new owner's.
type callerMemory struct {
	pid int // the caller's thread id (FUSE)
	// pinned: mem, not pid, reaches the caller; a negative mem reaches
	// nothing (every access faults).
	pinned bool
	mem    int
	// repin replaces mem when it reads nothing at all (chardev.Task.Repin).
	repin func() int
}

// pinnedMemory reaches the caller through mem, an open of its
// /proc/TID/mem, replaced by repin's when needed.
func pinnedMemory(mem int, repin func() int) callerMemory {
	return callerMemory{pinned: true, mem: mem, repin: repin}
}

func (m *callerMemory) ReadAt(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if m.pinned {
		return m.pio(unix.Pread, p, addr)
	}
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	if n < 0 {
		n = 0
	}
	return n, err
}

func (m *callerMemory) WriteAt(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if m.pinned {
		return m.pio(unix.Pwrite, p, addr)
	}
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&p[0])), Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMWritev(m.pid, local, remote, 0)
	if n < 0 {
		n = 0
	}
	return n, err
}

// pio reads or writes the pinned memory at addr. The file stops short
// where a page is not mapped (EIO there, a short count after some bytes)
// and gives 0 once the address space is gone: all faults to a handler,
// except that an address space gone while the call is live is the
// caller's old one (it exec'd since mem was made), which repin replaces.
func (m *callerMemory) pio(op func(int, []byte, int64) (int, error), p []byte, addr uint64) (int, error) {
	if m.mem < 0 || int64(addr) < 0 {
		return 0, unix.EFAULT
	}
	n, err := op(m.mem, p, int64(addr))
	if n == 0 && err == nil && m.repin != nil {
		m.repin, m.mem = nil, m.repin() // once: a fresh open that reads nothing is a dead caller's
		if m.mem < 0 {
			return 0, unix.EFAULT
		}
		n, err = op(m.mem, p, int64(addr))
	}
	if n < 0 {
		n = 0
	}
	if n == 0 && err == nil {
		err = unix.EFAULT
	}
	return n, err
}

// windowMemory is a request's view of the caller's memory. The kernel
// copies the FUSE output over the caller's first _IOC_SIZE bytes at arg
// after the reply (the window), so a handler's write that lands inside
// the window is kept in that output instead of being written to the
// caller and read back: one contiguous span is deferred this way. Writes
// elsewhere, or that overlap the window only in part, go straight to the
// caller.
type windowMemory struct {
	callerMemory
	start uint64
	out   []byte // the FUSE output buffer: the window's future contents
	// [lo, hi) of out holds deferred writes (relative to start).
	lo, hi int
	// wroteThrough: a direct write reached the window, so its bytes
	// outside [lo, hi) must be read back from the caller.
	wroteThrough bool
	// snap holds the window as a handler's read found it, so the output
	// needs no second read when nothing was written there directly.
	snap    []byte
	snapBuf [64]byte
}

func (m *windowMemory) end() uint64 { return m.start + uint64(len(m.out)) }

func (m *windowMemory) ReadAt(p []byte, addr uint64) (int, error) {
	n, err := m.callerMemory.ReadAt(p, addr)
	if m.snap == nil && !m.wroteThrough && len(m.out) > 0 && len(m.out) <= len(m.snapBuf) &&
		addr <= m.start && addr+uint64(n) >= m.end() {
		m.snap = m.snapBuf[:len(m.out)]
		copy(m.snap, p[m.start-addr:])
	}
	// Deferred bytes are what the caller's memory holds as far as the
	// handler can tell.
	if m.hi > m.lo && n > 0 {
		overlay(p[:n], addr, m.out[m.lo:m.hi], m.start+uint64(m.lo))
	}
	return n, err
}

// overlay copies the part of src (at address srcAddr) that overlaps dst
// (at dstAddr) into dst.
func overlay(dst []byte, dstAddr uint64, src []byte, srcAddr uint64) {
	lo, hi := max(dstAddr, srcAddr), min(dstAddr+uint64(len(dst)), srcAddr+uint64(len(src)))
	if lo < hi {
		copy(dst[lo-dstAddr:hi-dstAddr], src[lo-srcAddr:])
	}
}

func (m *windowMemory) WriteAt(p []byte, addr uint64) (int, error) {
	end := addr + uint64(len(p))
	if len(p) > 0 && addr >= m.start && end <= m.end() {
		lo, hi := int(addr-m.start), int(end-m.start)
		if m.hi == m.lo || (lo <= m.hi && hi >= m.lo) {
			copy(m.out[lo:hi], p)
			if m.hi == m.lo {
				m.lo, m.hi = lo, hi
			} else {
				m.lo, m.hi = min(m.lo, lo), max(m.hi, hi)
			}
			return len(p), nil
		}
	}
	if addr < m.end() && end > m.start {
		// Later bytes must land over the deferred ones, in order.
		if err := m.flush(); err != nil {
			return 0, err
		}
		m.wroteThrough = true
	}
	return m.callerMemory.WriteAt(p, addr)
}

// flush writes the deferred span to the caller now.
func (m *windowMemory) flush() error {
	if m.hi == m.lo {
		return nil
	}
	n, err := m.callerMemory.WriteAt(m.out[m.lo:m.hi], m.start+uint64(m.lo))
	if n < m.hi-m.lo && err == nil {
		err = unix.EFAULT
	}
	m.lo, m.hi = 0, 0
	m.wroteThrough = true
	return err
}

// finish completes the output for the kernel's copy-back: the bytes no
// handler deferred are what the caller's memory holds now. in is what
// the kernel copied in for _IOWR commands. It reports false when the
// caller's memory cannot be read there, as the kernel's copy-out would
// then fault too.
func (m *windowMemory) finish(in []byte) bool {
	if len(m.out) == 0 || (m.lo == 0 && m.hi == len(m.out)) {
		return true
	}
	var base []byte
	switch {
	case !m.wroteThrough && len(in) == len(m.out):
		base = in
	case !m.wroteThrough && m.snap != nil:
		base = m.snap // what the handler read there, unchanged since
	default:
		base = make([]byte, len(m.out))
		if k, _ := m.callerMemory.ReadAt(base, m.start); k < len(base) {
			return false
		}
	}
	copy(m.out[:m.lo], base)
	copy(m.out[m.hi:], base[m.hi:])
	return true
}
