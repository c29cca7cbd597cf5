package fs_test

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Without any mount (run's filter host view), a Direct of an Unmounted
// serves the driver: an open attaches, an ioctl answers, and the close
// of the last reference releases the open. No root or /dev/fuse needed.
func TestUnmountedDirect(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sys, err := device.NewSystem(device.Config{Instance: "trn2.3xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	x, err := fs.Unmounted(sys, fs.Options{}).NewDirect()
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	tid := int32(unix.Gettid())
	fd, err := x.Open(0, unix.O_RDWR, tid)
	if err != nil {
		t.Fatal(err)
	}
	open, ok := x.Lookup(tid, int32(fd))
	if !ok {
		t.Fatalf("fd %d not found as a direct open", fd)
	}
	var bi ioctl.DeviceBasicInfo
	if r, e := open.Ioctl(selfTask(t), ioctl.CmdDeviceBasicInfo, uint64(uintptr(unsafe.Pointer(&bi)))); r != 0 || e != 0 || bi.Architecture == 0 {
		t.Fatalf("DEVICE_BASIC_INFO: %d %v %+v", r, e, bi)
	}
	if n := x.Opens(0); n != 1 {
		t.Fatalf("%d opens of neuron0, want 1", n)
	}
	unix.Close(fd)
	x.Closed()
	deadline := time.Now().Add(directReleased(sys))
	for x.Opens(0) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the open is not released %v after its close", directReleased(sys))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
