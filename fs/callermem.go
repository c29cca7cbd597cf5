package fs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// callerMemory reads and writes a client's address space with
// process_vm_readv/writev, the way the driver uses copy_from_user and
// copy_to_user: the kernel's restricted FUSE ioctl only copies _IOC_SIZE
// bytes, while Neuron commands pass larger structs and nested pointers.
type callerMemory struct{ pid int }

func (m callerMemory) ReadAt(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	if n < 0 {
		n = 0
	}
	return n, err
}

func (m callerMemory) WriteAt(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&p[0])), Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMWritev(m.pid, local, remote, 0)
	if n < 0 {
		n = 0
	}
	return n, err
}

// watchedMemory notes whether a handler wrote into [start, end), the
// bytes the kernel will overwrite with the FUSE output after the reply.
type watchedMemory struct {
	callerMemory
	start, end uint64
	touched    bool
	// snap holds [start, end) as a handler's read found it, so the output
	// mirror needs no second read when nothing was written there.
	snap    []byte
	snapBuf [64]byte
}

func (m *watchedMemory) ReadAt(p []byte, addr uint64) (int, error) {
	n, err := m.callerMemory.ReadAt(p, addr)
	if m.snap == nil && !m.touched && m.end > m.start && m.end-m.start <= uint64(len(m.snapBuf)) &&
		addr <= m.start && addr+uint64(n) >= m.end {
		m.snap = m.snapBuf[:m.end-m.start]
		copy(m.snap, p[m.start-addr:])
	}
	return n, err
}

func (m *watchedMemory) WriteAt(p []byte, addr uint64) (int, error) {
	if addr < m.end && addr+uint64(len(p)) > m.start {
		m.touched = true
	}
	return m.callerMemory.WriteAt(p, addr)
}
