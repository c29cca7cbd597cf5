package fs

import (
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/testenv"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Without passthrough a client's mmap is page cache, not the device's
// memory: the mount-time self-test must notice and refuse, unless
// degraded mmap is asked for, in which case the ioctls still work.
func TestSelfTestRefusesIncoherentMmap(t *testing.T) {
	testenv.RequireFUSE(t)
	sys, err := device.NewSystem(device.Config{Instance: "inf2.xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	f, err := Mount(sys, t.TempDir(), Options{withoutPassthrough: true})
	if err == nil {
		f.Unmount()
		f.Abort()
		t.Fatal("mounted with incoherent mmap")
	}
	if !errors.Is(err, ErrMmapNotCoherent) {
		t.Fatalf("mount without passthrough: %v, want ErrMmapNotCoherent", err)
	}

	dir := t.TempDir()
	f, err = Mount(sys, dir, Options{withoutPassthrough: true, DegradedMmap: true})
	if err != nil {
		t.Fatalf("degraded mount: %v", err)
	}
	defer func() {
		f.Unmount()
		f.Abort()
	}()
	fd, err := unix.Open(dir+"/"+DevDir+"/neuron0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var bi ioctl.DeviceBasicInfo
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(ioctl.CmdDeviceBasicInfo), uintptr(unsafe.Pointer(&bi))); e != 0 || bi.Architecture != 2 {
		t.Fatalf("DEVICE_BASIC_INFO in degraded mode: %v %+v", e, bi)
	}
}

// With OtherMmap the mount starts quietly without coherent mmap and says
// so, for run to serve device descriptors another way.
func TestSelfTestOtherMmap(t *testing.T) {
	testenv.RequireFUSE(t)
	sys, err := device.NewSystem(device.Config{Instance: "inf2.xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	f, err := Mount(sys, t.TempDir(), Options{withoutPassthrough: true, OtherMmap: true})
	if err != nil {
		t.Fatalf("mount without passthrough, other mmap: %v", err)
	}
	defer func() {
		f.Unmount()
		f.Abort()
	}()
	if f.MmapCoherent() {
		t.Fatal("MmapCoherent without passthrough")
	}
}
