package device

import (
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device/mempool"
)

// Strict mode is a sanitizer for runtime developers that no real driver
// offers: handles stay per device as on the driver, but a process may
// only free, copy to or from, or memset a chunk it allocated, was handed
// (MEM_MC_GET_INFO_V2), or that belongs to the driver. Each refusal is
// logged with both processes.

// useChunk resolves a handle for a use that reads or changes the chunk.
func (r *Request) useChunk(h uint64) (*mempool.Chunk, Result) {
	d := r.Dev()
	c, res := d.mem.chunkFor(h)
	if res != 0 || !d.sys.strict {
		return c, res
	}
	tgid := r.Caller.Tgid
	if c.PID != 0 && c.PID != tgid && !d.mem.pool.SharedWith(c, tgid) {
		d.log.WithFields(logrus.Fields{"handle": h, "owner": c.PID, "caller": tgid, "cmd": r.Cmd}).Warn("strict: use of another process's chunk refused")
		return nil, Errno(syscall.EPERM)
	}
	return c, 0
}

// useRange resolves a handle for an access to [off, off+size) of its
// chunk: EINVAL for a bad handle or a range the driver's bounds check
// refuses. The driver does not check off+size for overflow; a wrapped
// range would reach outside the chunk and is refused here too.
func (r *Request) useRange(h, off, size uint64) (*mempool.Chunk, Result) {
	c, res := r.useChunk(h)
	if res != 0 {
		return nil, res
	}
	if !c.InBounds(off, size) || off+size < off {
		return nil, Errno(syscall.EINVAL)
	}
	return c, 0
}

// usePair resolves the two chunks of a chunk-to-chunk copy (MEM_COPY,
// MEM_COPY_ASYNC); the driver looks both up before it checks either range.
func (r *Request) usePair(src, srcOff, dst, dstOff, size uint64) (sc, dc *mempool.Chunk, res Result) {
	sc, res1 := r.useChunk(src)
	dc, res2 := r.useChunk(dst)
	if res := firstError(res1, res2); res != 0 {
		return nil, nil, r.memErrno(res, false)
	}
	if !sc.InBounds(srcOff, size) || !dc.InBounds(dstOff, size) || srcOff+size < srcOff || dstOff+size < dstOff {
		return nil, nil, r.memErrno(Errno(syscall.EINVAL), true)
	}
	return sc, dc, 0
}

// useMemRange is useRange for the memory commands whose errnos driver
// 2.29 changed (MEM_BUF_COPY, MEMSET).
func (r *Request) useMemRange(h, off, size uint64) (*mempool.Chunk, Result) {
	c, res := r.useChunk(h)
	if res != 0 {
		return nil, r.memErrno(res, false)
	}
	if !c.InBounds(off, size) || off+size < off {
		return nil, r.memErrno(Errno(syscall.EINVAL), true)
	}
	return c, 0
}

// memErrno is what the memory commands answer for a bad handle or a
// range outside the chunk: EINVAL, and from driver 2.29 ENOENT and E2BIG
// (a strict-mode refusal stays EPERM).
func (r *Request) memErrno(res Result, outOfRange bool) Result {
	if !r.Sys().quirks.HandleErrnos || res != Errno(syscall.EINVAL) {
		return res
	}
	if outOfRange {
		return Errno(syscall.E2BIG)
	}
	return Errno(syscall.ENOENT)
}

// copyInDenied is what the handlers that once answered a failed copy-in
// with EACCES (MEM_ALLOC, DMA_QUEUE_INIT) answer: EFAULT from 2.29.
func (r *Request) copyInDenied(n Result) Result {
	if r.Sys().quirks.CopyInEFAULT {
		return n // copyIn already answered EFAULT
	}
	return Errno(syscall.EACCES)
}
