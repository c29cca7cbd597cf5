package fs_test

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// A direct descriptor cannot resize the device's memory, memfd or file:
// a shrink killed the daemon with SIGBUS at its next access past the new
// end. The driver still answers after the attempts and the memory reads
// back what was written.
func TestDirectOpenCannotResize(t *testing.T) {
	for _, backing := range []string{"memfd", "file"} {
		t.Run(backing, func(t *testing.T) {
			cfg := device.Config{Instance: "trn2.48xlarge"}
			if backing == "file" {
				// tmpfs holds a file as long as a physical space; ext4
				// would need the compact store.
				dir, err := os.MkdirTemp("/dev/shm", "neuronfs-direct-")
				if err != nil {
					t.Skipf("no tmpfs at /dev/shm for a file backing: %v", err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				cfg.Backing = device.Backing{Dir: dir}
			}
			d := testutil.StartDaemon(t, cfg)
			x, err := d.FS.NewDirect()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(x.Close)
			// tid must outlive the test: an open of a file backing ends
			// the thread it was made on (chip.OpenForClient), which may
			// be this goroutine's unless it keeps its own.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid := int32(unix.Gettid())
			fd, err := x.Open(0, unix.O_RDWR, tid)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			chip := d.Sys.Devices[0].Chip()
			pa := d.Sys.Arch.HostBase + 1<<32 - 4096 // the page the self-test uses
			daemon, err := chip.PhysView(pa, 4096)
			if err != nil {
				t.Fatal(err)
			}
			copy(daemon, "intact")
			defer clear(daemon[:6])

			var st unix.Stat_t
			if err := unix.Fstat(chip.PhysFd(), &st); err != nil {
				t.Fatal(err)
			}
			span := st.Size
			if err := unix.Ftruncate(fd, 4096); err == nil {
				// Put the size back before the daemon touches the page.
				unix.Ftruncate(fd, span)
				t.Fatal("a direct descriptor's ftruncate to 4096 succeeded")
			}
			if err := unix.Ftruncate(fd, span+4096); err == nil {
				unix.Ftruncate(fd, span)
				t.Fatal("a direct descriptor's ftruncate past the span succeeded")
			}
			if string(daemon[:6]) != "intact" {
				t.Errorf("memory reads %q after the attempts", daemon[:6])
			}
			open, ok := x.Lookup(tid, int32(fd))
			if !ok {
				t.Fatalf("fd %d not found as a direct open", fd)
			}
			var bi ioctl.DeviceBasicInfo
			if r, e := open.Ioctl(selfTask(t), ioctl.CmdDeviceBasicInfo, uint64(uintptr(unsafe.Pointer(&bi)))); r != 0 || e != 0 || bi.Architecture == 0 {
				t.Fatalf("DEVICE_BASIC_INFO after the attempts: %d %v", r, e)
			}
		})
	}
}
