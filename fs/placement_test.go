package fs_test

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// GET_VA_PLACEMENT (driver 2.27.4.0) names the device and HBM behind a
// mapping of a whole device chunk this process made, from any fd; any
// other address gets ENXIO with both indexes -1. Driver 2.25.4.0 does
// not have the command.
func TestGetVAPlacement(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", DriverVersion: "2.27.4.0"})
	d3, err := runtime.Host{Root: dir}.Open(3)
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	hbm := mustMem(t, d3, 1<<20, runtime.AllocOptions{Channel: 2})
	hbmView := mustMap(t, hbm)
	host := mustMem(t, d3, 1<<20, runtime.AllocOptions{Host: true})
	hostView := mustMap(t, host)
	part, err := unix.Mmap(d3.Fd(), int64(hbm.PA), 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(part)
	heap := make([]byte, 64)

	misc := openDev(t, dir, 0, unix.O_WRONLY)
	normal := openDev(t, dir, 0, unix.O_RDWR)
	addr := func(b []byte, off int) uint64 { return uint64(uintptr(unsafe.Pointer(&b[off]))) }
	for _, c := range []struct {
		what     string
		fd       int
		va       uint64
		dev, hbm int32
		errno    unix.Errno
	}{
		{"device chunk, misc fd", misc, addr(hbmView, 0), 3, 2, 0},
		{"inside a device chunk, normal fd of another device", normal, addr(hbmView, 12345), 3, 2, 0},
		{"host chunk", misc, addr(hostView, 0), -1, -1, unix.ENXIO},
		{"part of a chunk (a raw mapping on the driver)", misc, addr(part, 0), -1, -1, unix.ENXIO},
		{"not a device mapping", misc, addr(heap, 0), -1, -1, unix.ENXIO},
	} {
		v := ioctl.GetVAPlacement{VA: c.va, DeviceIndex: 77, HBMIndex: 77}
		r, e := testutil.Ioctl(c.fd, ioctl.CmdGetVAPlacement, &v)
		expectErrno(t, c.what, r, e, 0, c.errno)
		if v.VA != c.va || v.DeviceIndex != c.dev || v.HBMIndex != c.hbm {
			t.Errorf("%s: %+v, want device %d HBM %d", c.what, v, c.dev, c.hbm)
		}
	}

	// Unmapped, the address no longer resolves.
	va := addr(hbmView, 0)
	unix.Munmap(hbmView)
	v := ioctl.GetVAPlacement{VA: va}
	r, e := testutil.Ioctl(misc, ioctl.CmdGetVAPlacement, &v)
	expectErrno(t, "after munmap", r, e, 0, unix.ENXIO)

	old, _ := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, old, 0, unix.O_WRONLY)
	r, e = testutil.Ioctl(fd, ioctl.CmdGetVAPlacement, &v)
	expectErrno(t, "2.25.4.0", r, e, 0, unix.EINVAL)
}
