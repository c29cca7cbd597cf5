package fs_test

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func TestZeroCopy(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := d.Alloc(1<<20, runtime.AllocOptions{Core: 0})
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := testutil.OffHeap(3 * 4096)
	defer unix.Munmap(buf)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	addr := uint64(testutil.AddrOf(buf))
	fd := d.Fd()
	zc := func(name string, v ioctl.MemBufCopy64ZC, wantR int, wantE unix.Errno) {
		t.Helper()
		v.MemHandle = m.Handle
		r, e := testutil.Ioctl(fd, ioctl.CmdMemBufZerocopy64, &v)
		expectErrno(t, name, r, e, wantR, wantE)
	}
	// The DMA path on the core's default queue, both ways.
	zc("DMA to device", ioctl.MemBufCopy64ZC{Buffer: addr, Size: 8192, Offset: 4096, IsCopyToDevice: 1, H2TQID: -1}, 0, 0)
	got := make([]byte, 8192)
	m.Read(4096, got)
	if !bytes.Equal(got, buf[:8192]) {
		t.Fatal("zero-copy write did not land")
	}
	zc("DMA from device", ioctl.MemBufCopy64ZC{Buffer: addr + 8192, Size: 16, Offset: 4096, H2TQID: 0}, 0, 0)
	if !bytes.Equal(buf[8192:8192+16], got[:16]) {
		t.Fatal("zero-copy read wrong")
	}
	// Queues: another core's default, out of range.
	zc("queue of core 1", ioctl.MemBufCopy64ZC{Buffer: addr, Size: 8192, IsCopyToDevice: 1, H2TQID: 1}, 0, unix.ENOENT)
	zc("queue 16", ioctl.MemBufCopy64ZC{Buffer: addr, Size: 8192, IsCopyToDevice: 1, H2TQID: 16}, 0, unix.ENOENT)
	// The BAR4 path for a small aligned write needs no queue at all.
	zc("BAR4 write", ioctl.MemBufCopy64ZC{Buffer: addr, Size: 64, Offset: 8, IsCopyToDevice: 1, BAR4WrThreshold: 128, H2TQID: 9}, 0, 0)
	// Faults: a count on the BAR4 path, ENOMEM (pinning) on the DMA path,
	// EFAULT for a range outside user space.
	zc("BAR4 write from unmapped memory", ioctl.MemBufCopy64ZC{Buffer: 16, Size: 64, IsCopyToDevice: 1, BAR4WrThreshold: 64, H2TQID: -1}, 64, 0)
	zc("DMA from unmapped memory", ioctl.MemBufCopy64ZC{Buffer: 16, Size: 65, IsCopyToDevice: 1, BAR4WrThreshold: 64, H2TQID: -1}, 0, unix.ENOMEM)
	zc("kernel address", ioctl.MemBufCopy64ZC{Buffer: 0xffff888000000000, Size: 64, IsCopyToDevice: 1, H2TQID: -1}, 0, unix.EFAULT)
	zc("past the chunk", ioctl.MemBufCopy64ZC{Buffer: addr, Size: 8192, Offset: 1<<20 - 4096, IsCopyToDevice: 1, H2TQID: -1}, 0, unix.EINVAL)
	// The 2.24 encoding (40 bytes) is obsolete.
	var old [40]byte
	r, e := testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead|ioctl.DirWrite, ioctl.Magic, 124, 40), &old)
	expectErrno(t, "2.24 ZEROCOPY64", r, e, 0, unix.EINVAL)

	// Batches: two batches on two chunks, with the handle offset applied.
	m2, _ := d.Alloc(4096, runtime.AllocOptions{Core: 0, Host: true})
	ops, _ := testutil.OffHeap(4096)
	defer unix.Munmap(ops)
	put := func(off int, vals ...uint64) {
		for i, v := range vals {
			*(*uint64)(unsafe.Pointer(&ops[off+8*i])) = v
		}
	}
	put(0, 0, 100, addr)         // op 0: offset 0, 100 bytes
	put(24, 200, 300, addr+4096) // op 1: offset 200, 300 bytes
	put(48, 8, 16, addr+8192)    // batch 2 op: offset 8
	batches := make([]ioctl.MemcpyBatch, 2)
	batches[0] = ioctl.MemcpyBatch{MemHandle: m.Handle, MemHandleOffset: 4096, OpsPtr: uint64(testutil.AddrOf(ops)), NumOps: 2}
	batches[1] = ioctl.MemcpyBatch{MemHandle: m2.Handle, OpsPtr: uint64(testutil.AddrOf(ops)) + 48, NumOps: 1}
	bv := ioctl.MemBufCopy64ZCBatches{BatchesPtr: uint64(uintptr(unsafe.Pointer(&batches[0]))), NumBatches: 2, IsCopyToDevice: 1, H2TQID: -1}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufZerocopy64Batches, &bv)
	expectErrno(t, "ZEROCOPY64_BATCHES", r, e, 0, 0)
	m.Read(4096+200, got[:300])
	if !bytes.Equal(got[:300], buf[4096:4096+300]) {
		t.Fatal("batch op 1 did not land at handle offset + op offset")
	}
	m2.Read(8, got[:16])
	if !bytes.Equal(got[:16], buf[8192:8192+16]) {
		t.Fatal("second batch did not land")
	}
	batches[1].NumOps = 0
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufZerocopy64Batches, &bv)
	expectErrno(t, "batch with no ops", r, e, 0, unix.EINVAL)
	bv.NumBatches = 0
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufZerocopy64Batches, &bv)
	expectErrno(t, "no batches", r, e, 0, unix.EINVAL)
}

// V2 retries DMA in reset windows and so has no zero-copy DMA; the BAR4
// path still works.
func TestZeroCopyV2(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.2xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, _ := d.Alloc(4096, runtime.AllocOptions{})
	buf, _ := testutil.OffHeap(4096)
	defer unix.Munmap(buf)
	v := ioctl.MemBufCopy64ZC{MemHandle: m.Handle, Buffer: uint64(testutil.AddrOf(buf)), Size: 4096, IsCopyToDevice: 1, H2TQID: -1}
	r, e := testutil.Ioctl(d.Fd(), ioctl.CmdMemBufZerocopy64, &v)
	expectErrno(t, "V2 DMA zero copy", r, e, 0, unix.EINVAL)
	v.Size, v.BAR4WrThreshold = 512, 1024
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdMemBufZerocopy64, &v)
	expectErrno(t, "V2 BAR4 write", r, e, 0, 0)
}
