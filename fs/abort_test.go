package fs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Abort ends the connection: requests fail with ENOTCONN instead of
// waiting for a server that is going away, and the mount still unmounts.
func TestAbort(t *testing.T) {
	testutil.RequireFUSE(t)
	sys, err := device.NewSystem(device.Config{Instance: "trn1.2xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	dir := t.TempDir()
	f, err := fs.Mount(sys, dir, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fd := openDev(t, dir, 0, unix.O_RDWR)
	var info ioctl.DeviceBasicInfo
	r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &info)
	expectErrno(t, "before the abort", r, e, 0, 0)
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	r, e = testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &info)
	expectErrno(t, "after the abort", r, e, 0, unix.ENOTCONN)
	unix.Close(fd)
	if err := f.Unmount(); err != nil {
		t.Fatalf("unmount after abort: %v", err)
	}
	if err := f.Abort(); err != nil {
		t.Errorf("a second abort (connection gone): %v", err)
	}
}
