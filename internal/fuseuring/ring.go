//go:build linux

package fuseuring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The raw io_uring interface, written from the kernel's uapi
// (include/uapi/linux/io_uring.h). Only what the transport uses: one ring
// per queue, 128-byte SQEs (a FUSE command needs the 80-byte cmd area),
// 16-byte CQEs, and a single mmap of both rings (every kernel that has
// FUSE-over-io_uring has IORING_FEAT_SINGLE_MMAP).

const (
	setupSQE128 = 1 << 10 // IORING_SETUP_SQE128

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS

	offSQRing = 0          // IORING_OFF_SQ_RING
	offSQEs   = 0x10000000 // IORING_OFF_SQES

	opRead     = 22 // IORING_OP_READ
	opURingCmd = 46 // IORING_OP_URING_CMD

	sqeSize = 128
	cqeSize = 16
)

// sqringOffsets mirrors struct io_sqring_offsets.
type sqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

// cqringOffsets mirrors struct io_cqring_offsets.
type cqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, Cqes, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

// params mirrors struct io_uring_params (120 bytes).
type params struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  sqringOffsets
	CQOff                                                                  cqringOffsets
}

// ring is one io_uring instance, used by one thread only.
type ring struct {
	fd    int
	mem   []byte // SQ and CQ rings (one mapping)
	sqes  []byte
	nsqe  uint32
	sqMsk uint32

	sqHead, sqTail *uint32
	sqArray        unsafe.Pointer
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           unsafe.Pointer

	pending uint32 // SQEs queued since the last enter
}

func newRing(entries uint32) (*ring, error) {
	var p params
	p.Flags = setupSQE128
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &ring{fd: int(fd)}
	if p.Features&featSingleMmap == 0 {
		r.close()
		return nil, fmt.Errorf("io_uring: kernel lacks IORING_FEAT_SINGLE_MMAP")
	}
	size := max(p.SQOff.Array+p.SQEntries*4, p.CQOff.Cqes+p.CQEntries*cqeSize)
	mem, err := unix.Mmap(r.fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring: mmap rings: %w", err)
	}
	r.mem = mem
	sqes, err := unix.Mmap(r.fd, offSQEs, int(p.SQEntries*sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring: mmap sqes: %w", err)
	}
	r.sqes = sqes
	r.nsqe = p.SQEntries
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&mem[off]) }
	r.sqHead = (*uint32)(at(p.SQOff.Head))
	r.sqTail = (*uint32)(at(p.SQOff.Tail))
	r.sqMsk = *(*uint32)(at(p.SQOff.RingMask))
	r.sqArray = at(p.SQOff.Array)
	r.cqHead = (*uint32)(at(p.CQOff.Head))
	r.cqTail = (*uint32)(at(p.CQOff.Tail))
	r.cqMask = *(*uint32)(at(p.CQOff.RingMask))
	r.cqes = at(p.CQOff.Cqes)
	return r, nil
}

func (r *ring) close() {
	if r.sqes != nil {
		unix.Munmap(r.sqes)
		r.sqes = nil
	}
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// sqe returns the next free SQE, zeroed, or nil when the SQ is full (the
// caller sized the ring so that it never is).
func (r *ring) sqe() []byte {
	tail := *r.sqTail // only this thread writes the tail
	if tail-atomic.LoadUint32(r.sqHead) >= r.nsqe {
		return nil
	}
	idx := tail & r.sqMsk
	s := r.sqes[idx*sqeSize : (idx+1)*sqeSize]
	clear(s)
	*(*uint32)(unsafe.Add(r.sqArray, 4*idx)) = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	r.pending++
	return s
}

// enter submits the queued SQEs and, with wait, sleeps until at least one
// completion is there. EINTR (the Go runtime's preemption signal) is
// retried; what the kernel already took is not submitted twice.
func (r *ring) enter(wait bool) error {
	flags, min := uintptr(0), uintptr(0)
	if wait {
		flags, min = enterGetEvents, 1
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.pending), min, flags, 0, 0)
		if errno == 0 {
			r.pending -= uint32(n)
			if r.pending == 0 || !wait {
				return nil
			}
			continue
		}
		if errno == syscall.EINTR {
			continue
		}
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
}

// cqe is one completion.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// reap calls fn for every completion there is, and consumes them.
func (r *ring) reap(fn func(cqe)) {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := *(*cqe)(unsafe.Add(r.cqes, cqeSize*uintptr(head&r.cqMask)))
		fn(c)
	}
	atomic.StoreUint32(r.cqHead, head)
}

// Little helpers to fill an SQE at the uapi's byte offsets.
func put8(b []byte, off int, v uint8)   { b[off] = v }
func put16(b []byte, off int, v uint16) { *(*uint16)(unsafe.Pointer(&b[off])) = v }
func put32(b []byte, off int, v uint32) { *(*uint32)(unsafe.Pointer(&b[off])) = v }
func put64(b []byte, off int, v uint64) { *(*uint64)(unsafe.Pointer(&b[off])) = v }

// SQE field offsets (struct io_uring_sqe).
const (
	sqeOpcode   = 0
	sqeFd       = 4
	sqeOff      = 8 // cmd_op (u32) for URING_CMD
	sqeAddr     = 16
	sqeLen      = 24
	sqeUserData = 32
	sqeCmd      = 48 // 80-byte command area with SQE128
)
