package runtime_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// The typed wrappers and the generic Call against an emulated Trn2.
func TestTypedCommands(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// A struct of the wrong type never reaches the driver.
	var wrong ioctl.MemFree
	if err := runtime.Call(d, ioctl.CmdSemaphoreRead, &wrong); err == nil || !strings.Contains(err.Error(), "SEMAPHORE_READ takes") {
		t.Errorf("mismatched struct: %v", err)
	}
	if err := runtime.Call(d, 0x1234, &wrong); err == nil {
		t.Error("an unknown command was issued")
	}

	if err := d.SemaphoreWrite(2, 5, 10); err != nil {
		t.Fatal(err)
	}
	if err := d.SemaphoreDecrement(2, 5, 3); err != nil {
		t.Fatal(err)
	}
	if v, err := d.SemaphoreRead(2, 5); err != nil || v != 7 {
		t.Errorf("semaphore %d %v", v, err)
	}
	if _, err := d.SemaphoreRead(8, 5); !isErrno(err, unix.E2BIG) {
		t.Errorf("semaphore of core 8: %v", err)
	}
	if err := d.EventSet(1, 256, 9); err != nil {
		t.Fatal(err)
	}
	if v, err := d.EventGet(1, 256); err != nil || v != 9 {
		t.Errorf("event %d %v", v, err)
	}

	// The semaphore area maps live: the write above reads through it.
	sem, err := d.MapResource(uint32(dhal.BlockTPB), 2, uint32(dhal.ResourceSemaphore))
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(sem[0x1000+4*5:]); v != 7 {
		t.Errorf("mapped semaphore 5 reads %d", v)
	}
	unix.Munmap(sem)

	off, size, err := d.ResourceMmapInfo(uint32(dhal.BlockTPB), 1, uint32(dhal.ResourceSBUF))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ProgramEngine(1, off, []byte("code")); err != nil {
		t.Fatal(err)
	}
	sbuf, err := unix.Mmap(d.Fd(), int64(off), int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if string(sbuf[:4]) != "code" {
		t.Errorf("SBUF holds %q", sbuf[:4])
	}
	unix.Munmap(sbuf)

	src, _ := d.Alloc(1<<20, runtime.AllocOptions{Host: true})
	dst, _ := d.Alloc(1<<20, runtime.AllocOptions{Core: 2})
	want := pattern(1<<20, 3)
	src.Write(0, want)
	ctx, err := dst.CopyAsync(0, src, 0, 1<<20, -1)
	if err != nil || ctx != 1 {
		t.Fatalf("async copy: context %d %v", ctx, err)
	}
	if err := dst.WaitCopy(src, ctx); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1<<20)
	dst.Read(0, got)
	if !bytes.Equal(got, want) {
		t.Error("async copy did not land")
	}

	if n, err := d.ModelStartedCount(3); err != nil || n != 0 {
		t.Errorf("model started count %d %v", n, err)
	}
	if pi, err := d.PodInfo(); err != nil || pi.PodType != 0 {
		t.Errorf("pod info %+v %v", pi.PodType, err)
	}
	if ps, err := d.PodStatus(); err != nil || ps.V1.State != 4 {
		t.Errorf("pod status state %d %v, want single node", ps.V1.State, err)
	}
	if err := d.MetricsCtrl(1); err != nil {
		t.Error(err)
	}
	if err := d.PostMetric([]byte("blob")); err != nil {
		t.Error(err)
	}
	if string(sys.Devices[0].Chip().FirmwareState().LastPost) != "blob" {
		t.Error("the metric did not reach the firmware")
	}
	vals, err := d.ReadHWCounters([]uint64{sys.Arch.MiscRAMDevice + mmio.RegAPIVersion})
	if err != nil || len(vals) != 1 || vals[0] < mmio.NewProtocolMinAPI {
		t.Errorf("hardware counters %v %v", vals, err)
	}
	if err := d.SetPowerProfile(2); err != nil {
		t.Error(err)
	}
	model := [32]byte{1}
	if err := d.CRWL(ioctl.CmdCRWLWriterEnter, 4, model); err != nil {
		t.Fatal(err)
	}
	if err := d.CRWL(ioctl.CmdCRWLWriterDowngrade, 4, [32]byte{2}); !isErrno(err, unix.ENOENT) {
		t.Errorf("downgrade with another model: %v", err)
	}
}

func isErrno(err error, want unix.Errno) bool {
	var e unix.Errno
	return errors.As(err, &e) && e == want
}
