package fs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Notification rings: allocated once per (core, queue), kept across
// processes, reallocated on demand, mapped by their mmap offset and torn
// down by a core reset.
func TestNotificationQueues(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	initV2 := func(name string, v ioctl.NotificationsInitV2, wantE unix.Errno) ioctl.NotificationsInitV2 {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdNotificationsInitV2, &v)
		expectErrno(t, name, r, e, 0, wantE)
		return v
	}
	hostQ := ioctl.NotificationsInitV2{NQDevID: 1, NQType: 2, EngineIndex: 3, Size: 1 << 16, OnHostMemory: 1}
	h := initV2("host ring", hostQ, 0)
	if h.MemHandle == 0 || h.MmapOffset == ^uint64(0) {
		t.Fatalf("host ring %+v", h)
	}
	const counter = "stats/memory_usage/host_mem/notifications/total"
	if got := testutil.DeviceCounter(t, dir, 0, counter); got != 1<<16 {
		t.Errorf("%s = %d after a 64 KiB ring", counter, got)
	}
	// The ring is mapped at its mmap offset; what the runtime writes there is
	// what the device memory commands see.
	m, err := unix.Mmap(fd, int64(h.MmapOffset), 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap host ring: %v", err)
	}
	copy(m[100:], "notification")
	unix.Munmap(m)
	buf, err := testutil.OffHeap(4096)
	if err != nil {
		t.Fatal(err)
	}
	bc := ioctl.MemBufCopy64{MemHandle: h.MemHandle, Buffer: uint64(testutil.AddrOf(buf)), Size: 12, Offset: 100}
	r, e := testutil.Ioctl(fd, ioctl.CmdMemBufCopy64, &bc)
	expectErrno(t, "copy out of the ring", r, e, 0, 0)
	if string(buf[:12]) != "notification" {
		t.Errorf("ring reads %q", buf[:12])
	}

	// A second init of the same queue reuses the ring, whatever size it asks.
	again := hostQ
	again.Size = 4096
	if a := initV2("same queue", again, 0); a.MemHandle != h.MemHandle || a.MmapOffset != h.MmapOffset {
		t.Errorf("re-init gave %+v, want the ring %+v", a, h)
	}
	// Forced reallocation gives a new ring and frees the old one.
	re := ioctl.NotificationsInitWithReallocV2{NQDevID: 1, NQType: 2, EngineIndex: 3, Size: 1 << 17, OnHostMemory: 1, ForceAllocMem: 1}
	r, e = testutil.Ioctl(fd, ioctl.CmdNotificationsInitWithReallocV2, &re)
	expectErrno(t, "realloc", r, e, 0, 0)
	if re.MmapOffset == h.MmapOffset {
		t.Errorf("forced realloc kept the ring at %#x", re.MmapOffset)
	}
	if got := testutil.DeviceCounter(t, dir, 0, counter); got != 1<<17 {
		t.Errorf("%s = %d after realloc to 128 KiB", counter, got)
	}

	// Device rings have no mmap offset and are aligned to their size.
	d := initV2("device ring", ioctl.NotificationsInitV2{NQDevID: 1, NQType: 0, EngineIndex: 0, Size: 1 << 20, DramChannel: 0}, 0)
	if d.MmapOffset != ^uint64(0) {
		t.Errorf("device ring mmap offset %#x", d.MmapOffset)
	}
	gp := ioctl.MemGetExtendedInfo{MemHandle: d.MemHandle}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemGetExtendedInfo, &gp)
	expectErrno(t, "device ring info", r, e, 0, 0)
	if gp.PA%(1<<20) != 0 || gp.HostMemory != 0 {
		t.Errorf("device ring %+v not 1 MiB aligned in HBM", gp)
	}
	ts := initV2("TOP_SP ring", ioctl.NotificationsInitV2{NQDevID: 3, NQDevType: 1, Size: 4096, OnHostMemory: 1}, 0)

	// V1: cores only, host memory, only an offset comes back.
	v1 := ioctl.NotificationsInitV1{NCID: 2, NQType: 1, EngineIndex: 0, Size: 8192}
	r, e = testutil.Ioctl(fd, ioctl.CmdNotificationsInitV1, &v1)
	expectErrno(t, "V1", r, e, 0, 0)
	if v1.MmapOffset == 0 || v1.MmapOffset == ^uint64(0) {
		t.Errorf("V1 mmap offset %#x", v1.MmapOffset)
	}

	initV2("size not a power of two", ioctl.NotificationsInitV2{NQDevID: 1, Size: 3000, OnHostMemory: 1}, unix.EINVAL)
	initV2("core 8", ioctl.NotificationsInitV2{NQDevID: 8, Size: 4096, OnHostMemory: 1}, unix.EINVAL)
	initV2("TOP_SP 16", ioctl.NotificationsInitV2{NQDevID: 16, NQDevType: 1, Size: 4096, OnHostMemory: 1}, unix.EINVAL)
	// The driver's ENOSYS cannot cross FUSE: the kernel turns an ioctl's
	// ENOSYS into ENOTTY.
	initV2("owner type 2", ioctl.NotificationsInitV2{NQDevType: 2, Size: 4096, OnHostMemory: 1}, unix.ENOTTY)
	initV2("queue id 96", ioctl.NotificationsInitV2{NQDevID: 1, NQType: 6, Size: 4096, OnHostMemory: 1}, unix.EINVAL)

	// Rings outlive the process that made them: a second open still sees
	// the same ring.
	fd2 := openDev(t, dir, 0, unix.O_RDWR)
	a := hostQ
	r, e = testutil.Ioctl(fd2, ioctl.CmdNotificationsInitV2, &a)
	expectErrno(t, "init from a second open", r, e, 0, 0)
	if a.MmapOffset != re.MmapOffset {
		t.Errorf("second open got ring %#x, want %#x", a.MmapOffset, re.MmapOffset)
	}

	// Resetting core 1 frees its rings (and its TOP_SPs'); the next init
	// allocates afresh.
	rs := ioctl.DeviceReset{NCMap: 1 << 1, RequestID: 77}
	r, e = testutil.Ioctl(fd, ioctl.CmdNCReset, &rs)
	expectErrno(t, "NC_RESET core 1", r, e, 0, 0)
	rr := ioctl.DeviceReady{RequestID: 77}
	r, e = testutil.Ioctl(fd, ioctl.CmdNCResetReady, &rr)
	expectErrno(t, "NC_RESET_READY", r, e, 0, 0)
	if got := testutil.DeviceCounter(t, dir, 0, counter); got != 8192 {
		t.Errorf("%s = %d after the core reset, want core 2's 8 KiB left", counter, got)
	}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemGetExtendedInfo, &ioctl.MemGetExtendedInfo{MemHandle: ts.MemHandle})
	expectErrno(t, "TOP_SP ring after the reset (positive 22)", r, e, 22, 0)
}
