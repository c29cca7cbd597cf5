package fs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// abortSystem is the emulated host of the abort tests, which need FUSE.
func abortSystem(t *testing.T) *device.System {
	t.Helper()
	testutil.RequireFUSE(t)
	sys, err := device.NewSystem(device.Config{Instance: "trn1.2xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	return sys
}

// mountAt mounts sys at dir; the test unmounts it.
func mountAt(t *testing.T, sys *device.System, dir string) *fs.FS {
	t.Helper()
	f, err := fs.Mount(sys, dir, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.GuardMount(t, dir)
	return f
}

// expectBasicInfo checks DEVICE_BASIC_INFO on fd against want.
func expectBasicInfo(t *testing.T, what string, fd int, want unix.Errno) {
	t.Helper()
	var info ioctl.DeviceBasicInfo
	r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &info)
	expectErrno(t, what, r, e, 0, want)
}

// Abort ends the connection: requests fail with ENOTCONN instead of
// waiting for a server that is going away, and the mount still unmounts.
func TestAbort(t *testing.T) {
	sys := abortSystem(t)
	dir := t.TempDir()
	f := mountAt(t, sys, dir)
	fd := openDev(t, dir, 0, unix.O_RDWR)
	expectBasicInfo(t, "before the abort", fd, 0)
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	expectBasicInfo(t, "after the abort", fd, unix.ENOTCONN)
	unix.Close(fd)
	if err := f.Unmount(); err != nil {
		t.Fatalf("unmount after abort: %v", err)
	}
	if err := f.Abort(); err != nil {
		t.Errorf("a second abort (connection gone): %v", err)
	}
}

// The kernel hands the device number an unmount frees to the next mount,
// and fusectl names a connection by that number alone: an Abort after
// an unmount that ended the connection must reach nobody, not the
// next mount that took its number.
func TestAbortAfterUnmountSparesTheNextMount(t *testing.T) {
	sys := abortSystem(t)
	mountDev := func(dir string) (*fs.FS, uint64) {
		t.Helper()
		f := mountAt(t, sys, dir)
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			t.Fatal(err)
		}
		return f, st.Dev
	}
	// Another test's mount may take the number first; try a few times.
	for attempt := 0; attempt < 10; attempt++ {
		first, dev := mountDev(t.TempDir())
		if err := first.Unmount(); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		next, nextDev := mountDev(dir)
		if nextDev != dev {
			next.Unmount()
			continue
		}
		if err := first.Abort(); err != nil {
			t.Errorf("abort after unmount: %v", err)
		}
		fd := openDev(t, dir, 0, unix.O_RDWR)
		expectBasicInfo(t, "the next mount, after the first one's abort", fd, 0)
		unix.Close(fd)
		if err := next.Unmount(); err != nil {
			t.Errorf("unmount of the next mount: %v", err)
		}
		return
	}
	t.Skip("every later mount got another device number (a busy machine)")
}

// An unmount of a mount still in use only detaches it: the connection
// lives on for its users, and Abort still ends it.
func TestAbortAfterBusyUnmount(t *testing.T) {
	sys := abortSystem(t)
	dir := t.TempDir()
	f := mountAt(t, sys, dir)
	fd := openDev(t, dir, 0, unix.O_RDWR)
	if err := f.Unmount(); err != nil {
		t.Fatalf("lazy unmount: %v", err)
	}
	expectBasicInfo(t, "a user of the detached mount", fd, 0)
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	expectBasicInfo(t, "after the abort", fd, unix.ENOTCONN)
}
