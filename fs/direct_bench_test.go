package fs_test

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// BenchmarkDirectIoctl measures the daemon's side of an ioctl of a
// direct descriptor: finding the open (Lookup) and serving the command
// (Ioctl), without the notification around them.
func BenchmarkDirectIoctl(b *testing.B) {
	d := testutil.StartDaemon(b, device.Config{Instance: "trn1.2xlarge"})
	x, err := d.FS.NewDirect()
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	runtime.LockOSThread() // see startDirect
	defer runtime.UnlockOSThread()
	tid := int32(unix.Gettid())
	fd, err := x.Open(0, unix.O_RDWR, tid)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	var bi ioctl.DeviceBasicInfo
	arg := uint64(uintptr(unsafe.Pointer(&bi)))
	b.Run("op=lookup", func(b *testing.B) {
		for b.Loop() {
			if _, ok := x.Lookup(tid, int32(fd)); !ok {
				b.Fatal("not found")
			}
		}
	})
	open, _ := x.Lookup(tid, int32(fd))
	self := selfTask(b)
	b.Run("op=ioctl", func(b *testing.B) {
		for b.Loop() {
			if r, e := open.Ioctl(self, ioctl.CmdDeviceBasicInfo, arg); r != 0 || e != 0 {
				b.Fatal(r, e)
			}
		}
	})
}
