package device

import (
	"errors"
	"syscall"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Memory commands: allocation, handles, information, copies and memset,
// over the device's pool (the driver's allocator) and its physical memory.

// errnoOf maps an allocator error to the driver's errno.
func errnoOf(err error) Result {
	var e syscall.Errno
	if errors.As(err, &e) {
		return Errno(e)
	}
	return Errno(syscall.EINVAL)
}

// memory is the device's allocator (the pool, with its handles) over the
// chip's physical memory: resolving handles, freeing, and pinned views of
// chunks. Both pointers are set at probe and never change; the pool has
// its own locks.
type memory struct {
	pool *mempool.Pool
	chip *chip.Chip
}

// chunkFor resolves a memory handle, or reports the driver's EINVAL.
func (m *memory) chunkFor(h uint64) (*mempool.Chunk, Result) {
	c, err := m.pool.Lookup(h)
	if err != nil {
		return nil, Errno(syscall.EINVAL)
	}
	return c, 0
}

// allocFor allocates process-lifespan memory for the caller, hands out a
// handle and writes it through the caller's pointer; on a failed write the
// chunk is freed again and the positive count returned, as the driver does.
func allocFor(r *Request, req mempool.AllocRequest, handlePtr uint64) Result {
	_, res := allocChunkFor(r, req, handlePtr)
	return res
}

// allocChunkFor is allocFor that also returns the chunk.
func allocChunkFor(r *Request, req mempool.AllocRequest, handlePtr uint64) (*mempool.Chunk, Result) {
	d := r.Dev()
	if !d.IsAttached(r.Caller.Tgid) {
		// Process memory for a process that never opened the device (an
		// inherited fd) trips a BUG_ON in the driver; here it is refused.
		return nil, Errno(syscall.EACCES)
	}
	req.Lifespan, req.PID = mempool.LifespanCurProcess, r.Caller.Tgid
	c, err := d.mem.pool.Alloc(req)
	if err != nil {
		return nil, errnoOf(err)
	}
	d.chip.Fill(c.PA, c.Size) // before any mapping can see it
	h, err := d.mem.pool.Handle(c)
	if err != nil {
		d.mem.free(c, r.Caller.Tgid)
		return nil, errnoOf(err)
	}
	if n := copyOut(r, handlePtr, &h); n != 0 {
		d.mem.free(c, r.Caller.Tgid)
		return nil, n
	}
	return c, 0
}

// free drops a reference; a chunk freed for good returns its memory
// to the host once no access to it is in progress.
func (m *memory) free(c *mempool.Chunk, caller int32) {
	if m.pool.Free(c, caller) {
		m.discard(c)
	}
}

// discard returns a freed chunk's memory to the host, then its range to
// the allocator (never the other way round: the range could be handed out
// and written before the punch).
func (m *memory) discard(c *mempool.Chunk) {
	m.chip.Punch(c.PA, c.Size)
	m.pool.Reclaim(c)
}

// unpin ends an access to c started by view.
func (m *memory) unpin(c *mempool.Chunk) {
	if m.pool.Unpin(c) {
		m.discard(c)
	}
}

// firstError returns the first failure: with two handles, the driver
// checks both and answers EINVAL if either is bad.
func firstError(results ...Result) Result {
	for _, r := range results {
		if r != 0 {
			return r
		}
	}
	return 0
}

// defaultMemType is the category of allocations that name none.
func defaultMemType(host bool) uint32 {
	if host {
		return mempool.MemTypeUnknownHost
	}
	return mempool.MemTypeUnknownDevice
}

// memAlloc is the legacy MEM_ALLOC: a failed copy-in is EACCES.
func memAlloc(r *Request) Result {
	var v ioctl.MemAlloc
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return r.copyInDenied(n)
	}
	host := v.HostMemory != 0
	return allocFor(r, mempool.AllocRequest{Size: v.Size, Host: host, Channel: v.DramChannel, NCID: v.NCID, MemType: defaultMemType(host)}, v.MemHandle)
}

// The _IOC_NR 102 family: V2, V2MT, V2MT64 and (2.28) V2MT64_PA.
func memAllocV2(r *Request, v *ioctl.MemAllocV2) Result {
	return allocFor(r, mempool.AllocRequest{Size: v.Size, Align: v.Align, Host: v.HostMemory != 0, Channel: v.DramChannel, NCID: v.NCID, MemType: defaultMemType(v.HostMemory != 0)}, v.MemHandle)
}

func memAllocV2MT(r *Request, v *ioctl.MemAllocV2MemType) Result {
	return allocFor(r, mempool.AllocRequest{Size: v.Size, Align: v.Align, Host: v.HostMemory != 0, Channel: v.DramChannel, NCID: v.NCID, MemType: v.MemType}, v.MemHandle)
}

// memAllocV2MT64PA (driver 2.28) allocates as V2MT64 does and writes the
// whole struct back with the chunk's physical address (a host chunk's
// with the host route bit, as MEM_GET_EXTENDED_INFO gives it).
func memAllocV2MT64PA(r *Request, v *ioctl.MemAllocV2MemType64PA) Result {
	c, res := allocChunkFor(r, mempool.AllocRequest{Size: v.Size, Align: v.Align, Host: v.HostMemory != 0, Channel: v.DramChannel, NCID: v.NCID, MemType: v.MemType}, v.MemHandle)
	if res != 0 {
		return res
	}
	v.PA = c.PA
	if c.Loc == mempool.LocHost {
		v.PA |= r.Sys().Arch.HostBase
	}
	if n := copyOut(r, r.Arg, v); n != 0 {
		r.Dev().mem.free(c, r.Caller.Tgid)
		return n
	}
	return 0
}

func memAllocV2MT64(r *Request, v *ioctl.MemAllocV2MemType64) Result {
	return allocFor(r, mempool.AllocRequest{Size: v.Size, Align: v.Align, Host: v.HostMemory != 0, Channel: v.DramChannel, NCID: v.NCID, MemType: v.MemType}, v.MemHandle)
}

func memFree(r *Request, v *ioctl.MemFree) Result {
	d := r.Dev()
	c, res := r.useChunk(v.MemHandle)
	if res != 0 {
		return r.memErrno(res, false)
	}
	d.mem.free(c, r.Caller.Tgid)
	return 0
}

// writePA writes the physical address of handle's chunk through the
// caller's pointer (MEM_GET_PA, and the first answer of MEM_GET_INFO).
func (r *Request) writePA(handle, ptr uint64) (uint64, Result) {
	c, res := r.Dev().mem.chunkFor(handle)
	if res != 0 {
		return 0, res
	}
	pa := c.PA
	return pa, copyOut(r, ptr, &pa)
}

func memGetPA(r *Request, v *ioctl.MemGetPA) Result {
	_, res := r.writePA(v.MemHandle, v.PA)
	return res
}

func memGetInfo(r *Request, v *ioctl.MemGetInfo) Result {
	pa, res := r.writePA(v.MemHandle, v.PA)
	if res != 0 {
		return res
	}
	if v.MmapOffset != 0 {
		return copyOut(r, v.MmapOffset, &pa)
	}
	return 0
}

// kernelChunkAddress stands for the kernel address of a chunk object that
// MEM_GET_EXTENDED_INFO leaks through mem_handle: a stable fake in the
// kernel's direct map, derived from the chunk's address.
func kernelChunkAddress(c *mempool.Chunk) uint64 {
	return 0xffff888100000000 | (c.PA>>6)&0xffffffff&^0x3f
}

// memGetExtendedInfo overwrites the whole struct. A bad handle returns a
// positive 22 (the driver's "return EINVAL" without the minus).
func memGetExtendedInfo(r *Request, v *ioctl.MemGetExtendedInfo) Result {
	c, err := r.Dev().mem.pool.Lookup(v.MemHandle)
	if err != nil {
		return Result(syscall.EINVAL)
	}
	out := ioctl.MemGetExtendedInfo{
		MemHandle:  kernelChunkAddress(c),
		MmapOffset: c.PA,
		PA:         c.PA,
		PID:        uint64(c.PID),
		Size:       c.Size,
	}
	if c.Loc == mempool.LocHost {
		out.HostMemory = 1
		out.PA |= r.Sys().Arch.HostBase
	}
	return copyOut(r, r.Arg, &out)
}

// memMCGetInfo (_IOC_NR 111, the size picks the version) finds the chunk
// (of any process) containing a physical address.
func memMCGetInfo(r *Request, v *ioctl.MemGetMCMmapInfo) Result {
	c, ok := r.Dev().mem.pool.Containing(v.PA)
	if !ok {
		return Errno(syscall.ENOMEM)
	}
	v.MmapOffset, v.Size = c.PA, c.Size
	return copyOut(r, r.Arg, v)
}

// memMCGetInfoV2 also hands out the chunk's handle.
func memMCGetInfoV2(r *Request, v *ioctl.MemGetMCMmapInfoV2) Result {
	d := r.Dev()
	c, ok := d.mem.pool.Containing(v.PA)
	if !ok {
		return Errno(syscall.ENOMEM)
	}
	v.MmapOffset, v.Size = c.PA, c.Size
	h, err := d.mem.pool.Handle(c)
	if err != nil {
		return errnoOf(err)
	}
	d.mem.pool.Share(c, r.Caller.Tgid)
	v.MemHandle = h
	return copyOut(r, r.Arg, v)
}

// dumpMemChunks is two-pass: the count always goes back; the records only
// when the caller made room for them, else EAGAIN.
func dumpMemChunks(r *Request, v *ioctl.DumpMemChunks) Result {
	d := r.Dev()
	var chunks []*mempool.Chunk
	if int(v.HBMIndex) < d.sys.Arch.HBMChannels {
		chunks = d.mem.pool.DeviceChunks(int(v.HBMIndex))
	}
	v.NumEntriesOut = uint32(len(chunks))
	if n := copyOut(r, r.Arg, v); n != 0 {
		return n
	}
	if v.NumEntriesIn < v.NumEntriesOut {
		return Errno(syscall.EAGAIN)
	}
	recs := make([]byte, 0, len(chunks)*ioctl.Sizeof[ioctl.MemChunkInfo]())
	for _, c := range chunks {
		info := ioctl.MemChunkInfo{PA: c.PA, Size: c.Size, MemType: c.MemType}
		recs = append(recs, ioctl.Bytes(&info)...)
	}
	return copyOutBytes(r, v.Data, recs)
}

// view returns [off, off+n) of a chunk's memory (which for a
// contiguous scratchpad may run past the chunk, up to the end of its main
// pool). The chunk is pinned until done is called: a free meanwhile takes
// effect then, so the memory never changes hands under the access. A
// chunk freed before the view is EINVAL, as its handle would be.
func (m *memory) view(c *mempool.Chunk, off, n uint64) (mem []byte, done func(), res Result) {
	if !m.pool.Pin(c) {
		return nil, nil, Errno(syscall.EINVAL)
	}
	v, ok := m.chip.Mem().Local(c.PA+off, n)
	if !ok {
		m.unpin(c)
		return nil, nil, Errno(syscall.ENOMEM)
	}
	return v, func() { m.unpin(c) }, 0
}

// dmaPiece is the size of one bounce-buffer DMA of the driver's
// buffer copies: a fault reports what was left of the failing piece.
const dmaPiece = 64 << 10

// The _IOC_NR 24 family: between a user buffer and a chunk.
func memBufCopy32(r *Request, v *ioctl.MemBufCopy) Result {
	return bufCopy(r, v.MemHandle, v.Buffer, uint64(v.Size), uint64(v.Offset), v.CopyToMemHandle != 0)
}

func memBufCopy64(r *Request, v *ioctl.MemBufCopy64) Result {
	return bufCopy(r, v.MemHandle, v.Buffer, v.Size, v.Offset, v.CopyToMemHandle != 0)
}

func bufCopy(r *Request, h, buf, size, off uint64, toChunk bool) Result {
	d := r.Dev()
	c, res := r.useMemRange(h, off, size)
	if res != 0 {
		return res
	}
	if c.Loc == mempool.LocDevice {
		// The driver's device path counts the remaining bytes in 32 bits.
		size &= 0xffffffff
	}
	mem, done, res := d.mem.view(c, off, size)
	if res != 0 {
		return res
	}
	defer done()
	var n int
	if toChunk {
		if !d.sys.admitWrite(d, c.PA+off, size, r.Caller.Tgid) {
			return copyRefused(r, c, size)
		}
		n, _ = r.Mem.ReadAt(mem, buf)
	} else {
		n, _ = r.Mem.WriteAt(mem, buf)
	}
	d.chip.AddBytes(uint64(n))
	if toChunk {
		d.chip.Restage() // what a device-fed queue waits for may be staged now
	}
	if uint64(n) == size {
		return 0
	}
	if r.Sys().quirks.CopyInEFAULT {
		return Errno(syscall.EFAULT) // driver 2.29, both directions
	}
	if c.Loc == mempool.LocHost {
		return notCopied(int(size), n) // one copy_{from,to}_user
	}
	// Device memory goes through 64 KiB pieces: the failing piece's rest.
	pieceEnd := min((uint64(n)/dmaPiece+1)*dmaPiece, size)
	return Result(pieceEnd - uint64(n))
}

// copyRefused answers a buffer copy the memory limit refused, as that
// path fails on the driver: a device chunk's bounce DMA fails (-1, EPERM);
// a host chunk's copy_from_user copies nothing.
func copyRefused(r *Request, c *mempool.Chunk, size uint64) Result {
	if c.Loc == mempool.LocHost {
		if r.Sys().quirks.CopyInEFAULT {
			return Errno(syscall.EFAULT)
		}
		return notCopied(int(size), 0)
	}
	return Errno(syscall.EPERM)
}

// The _IOC_NR 23 family: chunk to chunk.
func memCopy32(r *Request, v *ioctl.MemCopy) Result {
	return chunkCopy(r, v.SrcMemHandle, v.DstMemHandle, uint64(v.Size), uint64(v.SrcOffset), uint64(v.DstOffset))
}

func memCopy64(r *Request, v *ioctl.MemCopy64) Result {
	return chunkCopy(r, v.SrcMemHandle, v.DstMemHandle, v.Size, v.SrcOffset, v.DstOffset)
}

func chunkCopy(r *Request, src, dst, size, srcOff, dstOff uint64) Result {
	sc, dc, res := r.usePair(src, srcOff, dst, dstOff, size)
	if res != 0 {
		return res // usePair answers the version's errnos
	}
	d := r.Dev()
	if !d.sys.admitWrite(d, dc.PA+dstOff, size, r.Caller.Tgid) {
		return Errno(syscall.EPERM) // the DMA failed
	}
	res = d.mem.copyChunks(dc, dstOff, sc, srcOff, size)
	d.chip.Restage()
	return res
}

// copyChunks copies between two chunks' memory (a DMA on the device).
func (m *memory) copyChunks(dc *mempool.Chunk, dstOff uint64, sc *mempool.Chunk, srcOff, size uint64) Result {
	from, doneFrom, res := m.view(sc, srcOff, size)
	if res != 0 {
		return res
	}
	defer doneFrom()
	to, doneTo, res := m.view(dc, dstOff, size)
	if res != 0 {
		return res
	}
	defer doneTo()
	copy(to, from)
	m.chip.AddBytes(size)
	return 0
}

// The _IOC_NR 28 family: fills with the low byte of value.
func memset32(r *Request, v *ioctl.Memset) Result {
	return fillChunk(r, v.MemHandle, v.Offset, uint64(v.Size), v.Value)
}

func memset64(r *Request, v *ioctl.Memset64) Result {
	return fillChunk(r, v.MemHandle, v.Offset, v.Size, v.Value)
}

func fillChunk(r *Request, h, off, size uint64, value uint32) Result {
	d := r.Dev()
	c, res := r.useMemRange(h, off, size)
	if res != 0 {
		return res
	}
	mem, done, res := d.mem.view(c, off, size)
	if res != 0 {
		return res
	}
	defer done()
	if !d.sys.admitWrite(d, c.PA+off, size, r.Caller.Tgid) {
		return Errno(syscall.EPERM) // the DMA failed
	}
	fill(mem, byte(value))
	d.chip.AddBytes(size)
	return 0
}

// fill sets every byte of b, doubling the filled prefix (memmove speed).
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	if v == 0 {
		clear(b)
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
