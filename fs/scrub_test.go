package fs_test

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func TestHBMScrubAndDmabuf(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, _ := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
	m.Fill(0, 1<<20, 0x77)
	fd := d.Fd()
	start := func(name string, v ioctl.HBMScrubStart, wantE unix.Errno) {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdHBMScrubStart, &v)
		expectErrno(t, name, r, e, 0, wantE)
	}
	wait := func(name string, v ioctl.HBMScrubWait, wantE unix.Errno) {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdHBMScrubWait, &v)
		expectErrno(t, name, r, e, 0, wantE)
	}
	start("scrub channel 1 with zeros", ioctl.HBMScrubStart{HBMIndex: 1}, 0)
	wait("wait channel 1", ioctl.HBMScrubWait{HBMIndex: 1}, 0)
	got := make([]byte, 4096)
	m.Read(0, got)
	if !bytes.Equal(got, make([]byte, 4096)) {
		t.Fatal("scrub left data behind")
	}
	wait("wait without a scrub", ioctl.HBMScrubWait{HBMIndex: 1}, unix.EPERM)
	start("channel 4", ioctl.HBMScrubStart{HBMIndex: 4}, unix.EPERM)
	start("a non-zero pattern", ioctl.HBMScrubStart{HBMIndex: 2, InitVal: 5}, unix.ENOMEM)

	dv := ioctl.DMABufFD{VA: 0x1000, Size: 4096}
	r, e := testutil.Ioctl(fd, ioctl.CmdDMABufFD, &dv)
	expectErrno(t, "DMABUF_FD", r, e, 0, unix.EPROTONOSUPPORT)
}
