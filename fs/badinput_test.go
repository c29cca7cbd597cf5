package fs_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Garbage from one caller gets the driver's answer and never disturbs
// another caller served at the same time.
func TestBadInputKeepsServing(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	other := openDev(t, dir, 1, unix.O_RDWR)

	stop := make(chan struct{})
	var served, failed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var bi ioctl.DeviceBasicInfo
			if r, e := testutil.Ioctl(other, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture != 3 {
				failed.Add(1)
			}
			served.Add(1)
		}
	}()

	// Two pages: the second is made inaccessible to build structs that
	// end in unmapped memory.
	mem, err := testutil.OffHeap(2 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[4096:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	base := testutil.AddrOf(mem)
	edge := base + 4096 // first unmapped byte

	cases := []struct {
		name  string
		cmd   uint32
		arg   uintptr
		wantR int
		wantE unix.Errno
	}{
		// The top-level pointer is unmapped: the kernel's own copy of
		// _IOC_SIZE bytes faults (the driver would return a count).
		{"DEVICE_INFO arg unmapped", ioctl.CmdDeviceInfo, 16, 0, unix.EFAULT},
		{"COMPATIBLE_VERSION arg unmapped", ioctl.CmdCompatibleVersion, edge, 0, unix.EFAULT},
		{"DEVICE_BDF_EXT arg unmapped", ioctl.CmdDeviceBDFExt, 8, 0, unix.EFAULT},
		// The struct starts mapped and runs into the hole: the handler's
		// copy is short and it returns the bytes not copied.
		{"DEVICE_INFO truncated struct", ioctl.CmdDeviceInfo, edge - 40, 40, 0},
		{"DEVICE_BDF_EXT truncated struct", ioctl.CmdDeviceBDFExt, edge - 8, 8, 0},
		// _IOWR with the struct running into the hole: the kernel's copy-in faults.
		{"GET_LOGICAL_TO_PHYSICAL_NC_MAP truncated struct", ioctl.CmdGetLogicalToPhysicalNCMap, edge - 8, 0, unix.EFAULT},
		// Unknown commands, wrong type bytes, huge sizes.
		{"unknown nr", ioctl.IOC(ioctl.DirNone, ioctl.Magic, 200, 0), base, 0, unix.EINVAL},
		{"wrong type byte", ioctl.IOC(ioctl.DirWrite, 'X', 100, 8), base, 0, unix.EINVAL},
		{"huge size, unknown nr", ioctl.IOC(ioctl.DirRead|ioctl.DirWrite, ioctl.Magic, 250, 4000), base, 0, unix.EINVAL},
		{"huge size past the mapping", ioctl.IOC(ioctl.DirRead|ioctl.DirWrite, ioctl.Magic, 250, 16383), base, 0, unix.EFAULT},
		{"huge size, nr 102 family", ioctl.IOC(ioctl.DirRead, ioctl.Magic, 102, 4000), base, 0, unix.EINVAL},
	}
	for round := 0; round < 50 || served.Load() < 100; round++ {
		for _, c := range cases {
			r, e := testutil.IoctlAddr(fd, c.cmd, c.arg)
			expectErrno(t, c.name, r, e, c.wantR, c.wantE)
		}
		if t.Failed() {
			break
		}
	}
	// A nested pointer into the hole: the driver's positive count.
	l2p := (*ioctl.GetLogicalToPhysicalNCMap)(unsafe.Pointer(&mem[0]))
	*l2p = ioctl.GetLogicalToPhysicalNCMap{Map: uint64(edge - 4), MaxMapEntries: 2}
	r, e := testutil.IoctlAddr(fd, ioctl.CmdGetLogicalToPhysicalNCMap, base)
	expectErrno(t, "NC map pointer into the hole", r, e, 4+16-4, 0)

	close(stop)
	wg.Wait()
	if served.Load() == 0 || failed.Load() != 0 {
		t.Fatalf("concurrent caller: %d served, %d failed", served.Load(), failed.Load())
	}
	var bi ioctl.DeviceBasicInfo
	r, e = testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi)
	expectErrno(t, "after bad input", r, e, 0, 0)
}
