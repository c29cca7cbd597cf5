package fs_test

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// Driver 2.27.4.0's firmware features: the performance profile read back
// from the firmware, the profiles it offers, throttling notifications;
// and a firmware failure now fails POWER_PROFILE, where 2.25 returned 0.
func TestPerfProfiles2_27(t *testing.T) {
	dir, sys := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", DriverVersion: "2.27.4.0"})
	fd := openDev(t, dir, 0, unix.O_RDWR)
	get := func(what string, v ioctl.PowerProfile, wantE unix.Errno) ioctl.PowerProfile {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdGetPerformanceProfile, &v)
		expectErrno(t, what, r, e, 0, wantE)
		return v
	}
	if v := get("GET_PERFORMANCE_PROFILE", ioctl.PowerProfile{Sz: 8, Ctrl: 1, Profile: 99}, 0); v.Profile != 0 {
		t.Errorf("profile before any set: %d", v.Profile)
	}
	set := ioctl.PowerProfile{Sz: 8, Profile: 3}
	r, e := testutil.Ioctl(fd, ioctl.CmdPowerProfile, &set)
	expectErrno(t, "POWER_PROFILE 3", r, e, 0, 0)
	if v := get("GET_PERFORMANCE_PROFILE after a set", ioctl.PowerProfile{Sz: 8, Ctrl: 1}, 0); v.Profile != 3 {
		t.Errorf("profile %d, want 3", v.Profile)
	}
	get("sz 4", ioctl.PowerProfile{Sz: 4, Ctrl: 1}, unix.ENXIO)
	get("ctrl 0", ioctl.PowerProfile{Sz: 8}, ioctl.ENOTSUPP)

	avail := func(what string, feature uint16, wantE unix.Errno) ioctl.AvailablePerfProfiles {
		t.Helper()
		v := ioctl.AvailablePerfProfiles{RequestedFeature: feature, NumProfiles: 0xee}
		r, e := testutil.Ioctl(fd, ioctl.CmdAvailablePerfProfiles, &v)
		expectErrno(t, what, r, e, 0, wantE)
		return v
	}
	if v := avail("all profiles", 0, 0); v.NumProfiles != 4 || v.Bitmap[0] != 0x0f || v.RequestedFeature != 0 {
		t.Errorf("all profiles: %+v", v)
	}
	if v := avail("HBM-7200 profiles", 5, 0); v.NumProfiles != 0 || v.Bitmap != [32]uint8{} || v.RequestedFeature != 5 {
		t.Errorf("HBM-7200 profiles: %+v", v)
	}
	avail("an unknown feature (the firmware fails it)", 7, unix.EPERM)

	for _, enable := range []uint32{1, 0} {
		v := ioctl.ThrottlingNotifications{Enable: enable}
		r, e := testutil.Ioctl(fd, ioctl.CmdThrottlingNotifications, &v)
		expectErrno(t, "THROTTLING_NOTIFICATIONS", r, e, 0, 0)
		if got := sys.Devices[0].Chip().FirmwareState().Features; uint32(got) != enable {
			t.Errorf("firmware features %#x after enable=%d", got, enable)
		}
	}

	setFaults(t, dir, "fwio-fail")
	r, e = testutil.Ioctl(fd, ioctl.CmdPowerProfile, &set)
	expectErrno(t, "POWER_PROFILE under fwio-fail (2.27)", r, e, 0, unix.EPERM)
	old, _ := testutil.Mount(t, "trn2.48xlarge")
	setFaults(t, old, "fwio-fail")
	oldFd := openDev(t, old, 0, unix.O_RDWR)
	r, e = testutil.Ioctl(oldFd, ioctl.CmdPowerProfile, &set)
	expectErrno(t, "POWER_PROFILE under fwio-fail (2.25 ignores the failure)", r, e, 0, 0)
	r, e = testutil.Ioctl(oldFd, ioctl.CmdGetPerformanceProfile, &set)
	expectErrno(t, "GET_PERFORMANCE_PROFILE on 2.25", r, e, 0, unix.EINVAL)
}

// On V2 the profile is always 0 and no profile is offered: the caller's
// bitmap comes back as it was.
func TestPerfProfilesV2(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn1.2xlarge", DriverVersion: "2.27.4.0"})
	fd := openDev(t, dir, 0, unix.O_RDWR)
	p := ioctl.PowerProfile{Sz: 8, Ctrl: 1, Profile: 7}
	r, e := testutil.Ioctl(fd, ioctl.CmdGetPerformanceProfile, &p)
	expectErrno(t, "GET_PERFORMANCE_PROFILE", r, e, 0, 0)
	if p.Profile != 0 {
		t.Errorf("V2 profile %d", p.Profile)
	}
	v := ioctl.AvailablePerfProfiles{NumProfiles: 9}
	v.Bitmap[3] = 0xaa
	r, e = testutil.Ioctl(fd, ioctl.CmdAvailablePerfProfiles, &v)
	expectErrno(t, "AVAILABLE_PERF_PROFILES", r, e, 0, 0)
	if v.NumProfiles != 0 || v.Bitmap[3] != 0xaa {
		t.Errorf("V2 profiles: %+v", v)
	}
}

// Driver 2.27 gives every core's default h2t queue and every claimed copy
// queue an async completion queue in host memory, mappable at the offset
// GET_ASYNC_H2T_DMA_COMPL_QUEUES reports, with an initialised header.
func TestAsyncH2TComplQueues(t *testing.T) {
	dir, sys := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", DriverVersion: "2.27.4.0"})
	fd := openDev(t, dir, 0, unix.O_RDWR)
	ask := func(what string, nc, bitmap uint32, wantE unix.Errno) ioctl.GetAsyncH2TDMAComplQueues {
		t.Helper()
		v := ioctl.GetAsyncH2TDMAComplQueues{NCID: nc, QIDBitmap: bitmap}
		r, e := testutil.Ioctl(fd, ioctl.CmdGetAsyncH2TDMAComplQueues, &v)
		expectErrno(t, what, r, e, 0, wantE)
		return v
	}
	def := sys.Arch.H2TDefaultQueue(1)
	v := ask("core 1's default queue", 1, 1<<def, 0)
	info := v.ComplQueueInfo[def]
	if info.MmapOffset == 0 || info.MmapSize != 24592 {
		t.Fatalf("default queue: %+v", info)
	}
	m, err := unix.Mmap(fd, int64(info.MmapOffset), int(info.MmapSize), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if c, h, tl := binary.LittleEndian.Uint32(m), binary.LittleEndian.Uint32(m[4:]), binary.LittleEndian.Uint32(m[8:]); c != 1024 || h != 0 || tl != 0 {
		t.Errorf("header capacity %d head %d tail %d", c, h, tl)
	}

	alloc := ioctl.H2TDMAAllocQueues{Sz: 24, NCID: 1, CopyQueueCnt: 1, ServiceQueueCnt: 1}
	r, e := testutil.Ioctl(fd, ioctl.CmdH2TDMAAllocQueues, &alloc)
	expectErrno(t, "H2T_DMA_ALLOC_QUEUES", r, e, 0, 0)
	v = ask("a claimed copy queue", 1, alloc.CopyQueueBmap, 0)
	for q := range 16 {
		if alloc.CopyQueueBmap&(1<<q) != 0 && (v.ComplQueueInfo[q].MmapSize != 24592 || v.ComplQueueInfo[q].MmapOffset == info.MmapOffset) {
			t.Errorf("copy queue %d: %+v", q, v.ComplQueueInfo[q])
		}
	}
	// Each completion queue took a memory handle, as in the driver: a
	// process's first allocation comes after the cores' default queues'
	// and the copy queue's.
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if m := mustMem(t, d, 4096, runtime.AllocOptions{}); m.Handle != uint64(sys.Arch.CoresPerDevice)+2 {
		t.Errorf("first handle after the completion queues: %d, want %d", m.Handle, sys.Arch.CoresPerDevice+2)
	}
	ask("a service queue", 1, alloc.ServiceQueueBmap, unix.EINVAL)
	ask("a queue nobody claimed", 1, 1<<15, unix.EINVAL)
	ask("a core the device lacks", 8, 1<<def, unix.EINVAL)
}

// A BAR_READ address outside BAR0: 2.25 reads it anyway (EFAULT here);
// 2.27 checks every address first (EINVAL).
func TestBARReadBounds(t *testing.T) {
	for version, want := range map[string]unix.Errno{"2.25.4.0": unix.EFAULT, "2.27.4.0": unix.EINVAL} {
		dir, sys := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", DriverVersion: version})
		bar := newBarClient(t, openDev(t, dir, 0, unix.O_RDWR))
		r, e := bar.rw(ioctl.CmdBARRead, 0, []uint64{0, sys.Arch.BAR0Size}, make([]uint32, 2))
		expectErrno(t, "BAR_READ past BAR0 on "+version, r, e, 0, want)
	}
}
