package fs_test

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func TestAsyncCopy(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const size = 256 << 20
	src, _ := d.Alloc(size, runtime.AllocOptions{Host: true})
	dst, _ := d.Alloc(size, runtime.AllocOptions{Core: 3})
	src.Fill(0, size, 0x42)
	fd := d.Fd()
	copyAsync := func(name string, prev int32, n uint64, wantE unix.Errno) uint32 {
		t.Helper()
		v := ioctl.MemCopyAsync64{SrcMemHandle: src.Handle, DstMemHandle: dst.Handle, Size: n, PwaitHandle: uint32(prev), WaitHandle: 77}
		r, e := testutil.Ioctl(fd, ioctl.CmdMemCopyAsync64, &v)
		expectErrno(t, name, r, e, 0, wantE)
		return v.WaitHandle
	}
	wait := func(name string, h uint32, wantE unix.Errno) {
		t.Helper()
		v := ioctl.MemCopyAsyncWait{SrcMemHandle: src.Handle, DstMemHandle: dst.Handle, PwaitHandle: h}
		r, e := testutil.Ioctl(fd, ioctl.CmdMemCopyAsyncWait, &v)
		expectErrno(t, name, r, e, 0, wantE)
	}
	if h := copyAsync("first async copy", -1, 64<<20, 0); h != 1 {
		t.Fatalf("first wait handle %d, want 1", h)
	}
	if h := copyAsync("chained copy", 1, 64<<20, 0); h != 2 {
		t.Fatalf("chained wait handle %d, want 2", h)
	}
	wait("wait 2", 2, 0)
	got := make([]byte, 4096)
	dst.Read(64<<20-4096, got)
	if !bytes.Equal(got, bytes.Repeat([]byte{0x42}, 4096)) {
		t.Fatal("async copy did not land")
	}
	// Contexts: 2 was reaped, so waiting on it through a new copy fails.
	copyAsync("previous context idle", 2, 4096, unix.EINVAL)
	copyAsync("context 3", 3, 4096, unix.EINVAL)
	wait("wait on the sync context", 0, unix.EINVAL)
	// One async copy may not exceed one ring batch; a sync one may.
	copyAsync("async copy larger than a batch", -1, 200<<20, unix.EINVAL)
	if h := copyAsync("sync copy larger than a batch", 0, 200<<20, 0); h != 0 {
		t.Fatalf("sync wait handle %d", h)
	}
	dst.Read(200<<20-4096, got)
	if got[4095] != 0x42 {
		t.Fatal("sync copy did not land")
	}
	// The copies ran on core 3's default h2t queue (engine 129, queue 1).
	tx, _, err := d.QueueState(129, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tx.BaseAddr == 0 || tx.Length != 8192 || tx.HeadPointer == 0 || tx.HeadPointer != tx.TailPointer {
		t.Errorf("core 3's h2t queue after the copies: %+v", tx)
	}
	// The 32-bit variant is attach-gated and otherwise the same.
	v := ioctl.MemCopyAsync{SrcMemHandle: src.Handle, DstMemHandle: dst.Handle, Size: 4096, PwaitHandle: 0}
	r, e := testutil.Ioctl(fd, ioctl.CmdMemCopyAsync, &v)
	expectErrno(t, "MEM_COPY_ASYNC", r, e, 0, 0)
}
