package fs_test

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Every discovery ioctl and sysfs file of every architecture, through a
// real mount, against the instance profile.
func TestHostMatchesProfile(t *testing.T) {
	for _, name := range []string{"trn1.32xlarge", "inf2.48xlarge", "inf2.xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(name, func(t *testing.T) {
			dir, sys := testutil.Mount(t, name)
			if err := testutil.CheckHost(dir, sys.Instance); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func openDev(t *testing.T, dir string, i int, flags int) int {
	t.Helper()
	fd, err := unix.Open(dir+"/dev/neuron"+strconv.Itoa(i), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// expectErrno checks ioctl()'s result; a failing call returns -1.
func expectErrno(t *testing.T, what string, r int, e unix.Errno, wantR int, wantE unix.Errno) {
	t.Helper()
	if wantE != 0 {
		wantR = -1
	}
	if r != wantR || e != wantE {
		t.Errorf("%s: ioctl = %d, %v; want %d, %v", what, r, e, wantR, wantE)
	}
}

func TestDriverInfoVariants(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)

	// A larger encoded size is accepted but only 24 bytes are written.
	buf := make([]byte, 32)
	for i := range buf {
		buf[i] = 0xee
	}
	r, e := testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead, ioctl.Magic, 110, 32), (*[32]byte)(buf))
	expectErrno(t, "DRIVER_INFO size 32", r, e, 0, 0)
	got, _ := ioctl.Decode[ioctl.DeviceDriverInfo](buf)
	if got.Architecture != 3 || got.Size != 24 || got.FeatureFlags1 != 0x1ff {
		t.Errorf("DRIVER_INFO size 32 = %+v", got)
	}
	for _, b := range buf[24:] {
		if b != 0xee {
			t.Fatalf("DRIVER_INFO wrote past 24 bytes: % x", buf[24:])
		}
	}
	var di ioctl.DeviceDriverInfo
	r, e = testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead, ioctl.Magic, 110, 16), &di)
	expectErrno(t, "DRIVER_INFO size 16", r, e, 0, unix.EINVAL)
	r, e = testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead|ioctl.DirWrite, ioctl.Magic, 110, 24), &di)
	expectErrno(t, "DRIVER_INFO _IOWR", r, e, 0, unix.EINVAL)
	r, e = testutil.Ioctl(fd, ioctl.CmdDriverInfoSet, &di)
	expectErrno(t, "DRIVER_INFO_SET", r, e, 0, ioctl.ENOTSUPP)
	// The driver matches nr 110 whatever the type byte says.
	r, e = testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead, 'X', 110, 24), &di)
	expectErrno(t, "DRIVER_INFO type X", r, e, 0, 0)
}

func TestStubsAndRefusals(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)

	// DEVICE_INIT encodes 8 bytes for a 4-byte struct: the 4 bytes after
	// the struct must come back unchanged.
	words := [2]uint32{0x11111111, 0x22222222}
	r, e := testutil.Ioctl(fd, ioctl.CmdDeviceInit, &words)
	expectErrno(t, "DEVICE_INIT", r, e, 0, 0)
	if words != [2]uint32{0x11111111, 0x22222222} {
		t.Errorf("DEVICE_INIT changed caller memory: %#x", words)
	}
	r, e = testutil.IoctlAddr(fd, ioctl.CmdDeviceRelease, 0)
	expectErrno(t, "DEVICE_RELEASE", r, e, 0, 0)
	status := uint8(7)
	r, e = testutil.Ioctl(fd, ioctl.CmdDeviceResetStatus, &status)
	expectErrno(t, "DEVICE_RESET_STATUS", r, e, 0, 0)
	if status != 1 {
		t.Errorf("DEVICE_RESET_STATUS = %d", status)
	}
	var qi ioctl.NotificationsQueueInfo
	r, e = testutil.Ioctl(fd, ioctl.CmdNotificationsQueueInfo, &qi)
	expectErrno(t, "NOTIFICATIONS_QUEUE_INFO", r, e, 0, unix.EPERM)
	var qq ioctl.DMAQuiesceQueues
	r, e = testutil.Ioctl(fd, ioctl.CmdDMAQuiesceQueues, &qq)
	expectErrno(t, "DMA_QUIESCE_QUEUES", r, e, 0, unix.ENOTTY)
	var nd ioctl.NotificationsDestroy
	r, e = testutil.Ioctl(fd, ioctl.CmdNotificationsDestroyV1, &nd)
	expectErrno(t, "NOTIFICATIONS_DESTROY_V1", r, e, 0, 0)
	mode := ioctl.MetricsCtrl{Mode: 1}
	r, e = testutil.Ioctl(fd, ioctl.CmdMetricsCtrl, &mode)
	expectErrno(t, "METRICS_CTRL", r, e, 0, 0)

	// No counters: an empty firmware READ, which succeeds.
	var hw ioctl.ReadHWCounters
	r, e = testutil.Ioctl(fd, ioctl.CmdReadHWCounters, &hw)
	expectErrno(t, "READ_HW_COUNTERS of 0 counters", r, e, 0, 0)
	// A size that is no member of the nr-102 family is EINVAL.
	var alloc ioctl.MemAllocV2MemType64
	r, e = testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead, ioctl.Magic, 102, 40), &alloc)
	expectErrno(t, "nr 102 size 40", r, e, 0, unix.EINVAL)

	// GET_ALL_APPS_INFO lists this process.
	buf := make([]byte, 16+4*152)
	hdr := ioctl.GetAppsInfo{Capacity: 4}
	copy(buf, ioctl.Bytes(&hdr))
	r, e = testutil.Ioctl(fd, ioctl.CmdDeviceGetAllAppsInfo, (*[16 + 4*152]byte)(buf))
	expectErrno(t, "GET_ALL_APPS_INFO", r, e, 0, 0)
	hdr, _ = ioctl.Decode[ioctl.GetAppsInfo](buf)
	app, _ := ioctl.Decode[ioctl.AppInfo](buf[16:])
	if hdr.Size != 1 || app.PID != int32(os.Getpid()) {
		t.Errorf("GET_ALL_APPS_INFO size %d pid %d, want 1 %d", hdr.Size, app.PID, os.Getpid())
	}

	// NC_PID_STATE_DUMP takes a host-wide core index.
	dump := ioctl.NCPIDStateDump{NCID: 512}
	r, e = testutil.Ioctl(fd, ioctl.CmdNCPIDStateDump, &dump)
	expectErrno(t, "NC_PID_STATE_DUMP 512", r, e, 0, unix.ENOENT)
	dump.NCID = uint32(len(sys.Devices) * sys.Arch.CoresPerDevice)
	r, e = testutil.Ioctl(fd, ioctl.CmdNCPIDStateDump, &dump)
	expectErrno(t, "NC_PID_STATE_DUMP past last device", r, e, 0, unix.EPERM)
	dump.NCID = 9
	r, e = testutil.Ioctl(fd, ioctl.CmdNCPIDStateDump, &dump)
	expectErrno(t, "NC_PID_STATE_DUMP unmarked", r, e, 0, 0)

	// GET_LOGICAL_TO_PHYSICAL_NC_MAP validation.
	l2p := ioctl.GetLogicalToPhysicalNCMap{MaxMapEntries: 129}
	r, e = testutil.Ioctl(fd, ioctl.CmdGetLogicalToPhysicalNCMap, &l2p)
	expectErrno(t, "NC map 129 entries", r, e, 0, unix.EINVAL)
	l2p = ioctl.GetLogicalToPhysicalNCMap{MaxMapEntries: 8, MappingVersion: 1}
	r, e = testutil.Ioctl(fd, ioctl.CmdGetLogicalToPhysicalNCMap, &l2p)
	expectErrno(t, "NC map version 1", r, e, 0, unix.EINVAL)

	// HOST_DEVICE_ID_TO_RID_MAP insists on its 260-byte size.
	var rid [256]byte
	r, e = testutil.Ioctl(fd, ioctl.IOC(ioctl.DirRead|ioctl.DirWrite, ioctl.Magic, 115, 256), &rid)
	expectErrno(t, "RID map size 256", r, e, 0, unix.EINVAL)
}

func TestPrintk(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.2xlarge")
	fd := openDev(t, dir, 0, unix.O_WRONLY)
	msg, err := testutil.OffHeap(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(msg)
	copy(msg, "hello from a test\x00")
	p := ioctl.Printk{Buffer: uint64(testutil.AddrOf(msg)), Size: 18}
	r, e := testutil.Ioctl(fd, ioctl.CmdPrintk, &p)
	expectErrno(t, "PRINTK", r, e, 0, 0)
	p.Size = 5 // no NUL at the end
	r, e = testutil.Ioctl(fd, ioctl.CmdPrintk, &p)
	expectErrno(t, "PRINTK without NUL", r, e, 0, unix.EBADMSG)
	p.Size = 513
	r, e = testutil.Ioctl(fd, ioctl.CmdPrintk, &p)
	expectErrno(t, "PRINTK 513 bytes", r, e, 0, unix.EFAULT)
	// A buffer pointer into unmapped memory: the driver returns the
	// number of bytes it could not copy, with no errno.
	p = ioctl.Printk{Buffer: 16, Size: 9}
	r, e = testutil.Ioctl(fd, ioctl.CmdPrintk, &p)
	expectErrno(t, "PRINTK bad buffer", r, e, 9, 0)
}

// V2 has no logical-to-physical map.
func TestLogicalToPhysicalV2(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.32xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	l2p := ioctl.GetLogicalToPhysicalNCMap{MaxMapEntries: 8}
	r, e := testutil.Ioctl(fd, ioctl.CmdGetLogicalToPhysicalNCMap, &l2p)
	expectErrno(t, "NC map on V2", r, e, 0, ioctl.ENOTSUPP)
	var _ = dhal.V2
}

// Writing anything to a counter file zeroes that value; notify_delay
// takes 0 and -1 only.
func TestSysfsWrites(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.2xlarge")
	base := dir + "/sys/devices/virtual/neuron_device/neuron0/"
	total := base + "neuron_core1/stats/other_info/reset_req_count/total"
	if b, _ := os.ReadFile(total); string(b) != "1\n" {
		t.Fatalf("reset_req_count before: %q", b)
	}
	if err := os.WriteFile(total, []byte("anything"), 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(total); string(b) != "0\n" {
		t.Fatalf("reset_req_count after a write: %q", b)
	}
	if b, _ := os.ReadFile(base + "neuron_core1/stats/other_info/reset_req_count/present"); string(b) != "1\n" {
		t.Fatalf("present changed by a write to total: %q", b)
	}
	if err := os.WriteFile(base+"info/notify_delay", []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(base + "info/notify_delay"); string(b) != "0\n" {
		t.Fatalf("notify_delay = %q", b)
	}
	// Other values are ignored, and the write succeeds, as in the driver.
	if err := os.WriteFile(base+"info/notify_delay", []byte("7"), 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(base + "info/notify_delay"); string(b) != "0\n" {
		t.Fatalf("notify_delay after writing 7 = %q", b)
	}
	if err := os.WriteFile(base+"info/serial_number", []byte("0"), 0); err != nil {
		t.Fatalf("writing serial_number (0644): %v", err)
	}
	if err := os.WriteFile(base+"core_count", []byte("9"), 0); err == nil {
		t.Fatal("core_count is writable")
	}
}
