package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Zero-copy transfers between user memory and a chunk. Small aligned
// writes to device memory take the driver's BAR4 path (a CPU copy whose
// fault returns a not-copied count); everything else is a DMA straight
// from or to the user pages on an h2t queue of the chunk's core.

const (
	bar4WriteThresholdMax = 2 * 4096 // PAGE_SIZE * 2
	h2tDefaultQID         = -1       // NEURON_DMA_H2T_DEFAULT_QID
)

// accessOK is the kernel's access_ok: the range lies in user space
// (below taskSizeMax, the architecture's: tasksize_*.go).
func accessOK(addr, size uint64) bool {
	return addr+size >= addr && addr+size <= taskSizeMax
}

// zeroCopyOp is one transfer of a zero-copy request.
type zeroCopyOp struct {
	offset, size, buffer uint64
}

// zeroCopyQueue checks the h2t queue a DMA would use: a valid index that
// serves the chunk's core (its default queue, or a copy queue it claimed
// with H2T_DMA_ALLOC_QUEUES).
func (d *Device) zeroCopyQueue(c *mempool.Chunk, qid int32) Result {
	q := int(qid)
	if qid == h2tDefaultQID {
		q = d.sys.Arch.H2TDefaultQueue(c.NCID)
	}
	if q < 0 || q >= d.sys.Arch.QueuesPerEngine {
		return Errno(syscall.ENOENT)
	}
	// Only V2 retries DMA inside reset windows, which rules zero copy out.
	if d.sys.Arch.Arch == dhal.V2 {
		return Errno(syscall.EINVAL)
	}
	if !d.h2t.isCopyQueue(c.NCID, q) {
		return Errno(syscall.ENOENT)
	}
	return 0
}

// zeroCopy moves the ops; bar4 selects the CPU path.
func (d *Device) zeroCopy(r *Request, c *mempool.Chunk, ops []zeroCopyOp, toDevice, bar4 bool) Result {
	for _, op := range ops {
		mem, done, res := d.mem.view(c, op.offset, op.size)
		if res != 0 {
			return res
		}
		var n int
		if toDevice {
			n, _ = r.Mem.ReadAt(mem, op.buffer)
		} else {
			n, _ = r.Mem.WriteAt(mem, op.buffer)
		}
		done()
		if uint64(n) < op.size {
			if bar4 {
				return notCopied(int(op.size), n)
			}
			return Errno(syscall.ENOMEM) // the user pages could not be pinned
		}
	}
	return 0
}

// bar4Usable: the emulated device always has BAR4 mapped.
func bar4Usable(c *mempool.Chunk, toDevice bool) bool {
	return toDevice && c.Loc == mempool.LocDevice
}

func memBufZeroCopy64(r *Request) Result {
	if _, ok := r.Sys().Table.Lookup(r.Cmd); ok && r.Cmd == ioctl.CmdMemBufZerocopy64V2_24_7_0 {
		// Driver 2.24's experimental zero copy (40-byte struct) is not
		// emulated.
		return unsupported(r)
	}
	// The size the version's struct has (48 bytes; 64 from 2.29, whose
	// extra sequence number and context ask for an asynchronous
	// completion this emulation does not post: it completes at once).
	zc, _ := r.Sys().Table.ByName("NEURON_IOCTL_MEM_BUF_ZEROCOPY64")
	if zc == nil || ioctl.Size(r.Cmd) != zc.EncodedSize() {
		return Errno(syscall.EINVAL) // an obsolete encoding
	}
	var v ioctl.MemBufCopy64ZC // the first 48 bytes, common to both
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
	d := r.Dev()
	c, res := r.useRange(v.MemHandle, v.Offset, v.Size)
	if res != 0 {
		return res
	}
	if !accessOK(v.Buffer, v.Size) {
		return Errno(syscall.EFAULT)
	}
	toDevice := v.IsCopyToDevice != 0
	threshold := min(uint64(v.BAR4WrThreshold), bar4WriteThresholdMax)
	ops := []zeroCopyOp{{offset: v.Offset, size: v.Size, buffer: v.Buffer}}
	if bar4Usable(c, toDevice) && v.Size <= threshold && v.Size%4 == 0 && v.Offset%4 == 0 {
		return d.zeroCopy(r, c, ops, true, true)
	}
	if res := d.zeroCopyQueue(c, v.H2TQID); res != 0 {
		return res
	}
	return d.zeroCopy(r, c, ops, toDevice, false)
}

// maxZeroCopyOps bounds one batch request; the driver is bounded only by
// kmalloc, which fails long before this.
const maxZeroCopyOps = 1 << 20

func memBufZeroCopy64Batches(r *Request, v *ioctl.MemBufCopy64ZCBatches) Result {
	if v.BatchesPtr == 0 || v.NumBatches == 0 {
		return Errno(syscall.EINVAL)
	}
	if v.NumBatches > maxZeroCopyOps {
		return Errno(syscall.ENOMEM)
	}
	bsize := ioctl.Sizeof[ioctl.MemcpyBatch]()
	raw := make([]byte, int(v.NumBatches)*bsize)
	if res := r.readUser(raw, v.BatchesPtr); res != 0 {
		return res
	}
	batches := make([]ioctl.MemcpyBatch, v.NumBatches)
	total := 0
	for i := range batches {
		batches[i], _ = ioctl.Decode[ioctl.MemcpyBatch](raw[i*bsize:])
		if batches[i].NumOps == 0 || batches[i].OpsPtr == 0 {
			return Errno(syscall.EINVAL)
		}
		total += int(batches[i].NumOps)
		if total > maxZeroCopyOps {
			return Errno(syscall.ENOMEM)
		}
	}
	d := r.Dev()
	toDevice := v.IsCopyToDevice != 0
	osize := ioctl.Sizeof[ioctl.NRTTensorBatchOp]()
	// Batches run in order; an error stops the rest (earlier ones stay done).
	for _, b := range batches {
		opsRaw := make([]byte, int(b.NumOps)*osize)
		if res := r.readUser(opsRaw, b.OpsPtr); res != 0 {
			return res
		}
		c, res := r.useChunk(b.MemHandle)
		if res != 0 {
			return res
		}
		threshold := min(uint64(b.BAR4WrThreshold), bar4WriteThresholdMax)
		bar4 := bar4Usable(c, toDevice)
		ops := make([]zeroCopyOp, b.NumOps)
		for j := range ops {
			op, _ := ioctl.Decode[ioctl.NRTTensorBatchOp](opsRaw[j*osize:])
			if op.Size == 0 || op.Buffer == 0 {
				return Errno(syscall.EINVAL)
			}
			off := op.Offset + b.MemHandleOffset
			if !c.InBounds(off, op.Size) || off+op.Size < off {
				return Errno(syscall.EINVAL)
			}
			if !accessOK(op.Buffer, op.Size) {
				return Errno(syscall.EFAULT)
			}
			if op.Size > threshold || op.Size%4 != 0 || off%4 != 0 {
				bar4 = false
			}
			ops[j] = zeroCopyOp{offset: off, size: op.Size, buffer: op.Buffer}
		}
		if !bar4 {
			if res := d.zeroCopyQueue(c, v.H2TQID); res != 0 {
				return res
			}
		}
		if res := d.zeroCopy(r, c, ops, toDevice, bar4); res != 0 {
			return res
		}
	}
	return 0
}
