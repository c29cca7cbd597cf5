package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// CheckHost checks a host that claims to be instance inst through its
// device nodes and sysfs files under root ("/" inside `neuronfs run`, the
// mount point of a bare mount). Expected values come from the dhal profile
// and the driver facts written out here, never from the device package.
func CheckHost(root string, inst *dhal.Instance) error {
	c := &checker{root: root, inst: inst}
	facts, err := dhal.Facts(inst.Product.Arch)
	if err != nil {
		return err
	}
	c.facts = facts
	c.sysfs()
	for i := 0; i < inst.Devices; i++ {
		c.device(i)
	}
	c.others()
	return errors.Join(c.errs...)
}

type checker struct {
	root  string
	inst  *dhal.Instance
	facts *dhal.ArchFacts
	errs  []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *checker) path(p string) string { return filepath.Join(c.root, p) }

func (c *checker) file(p, want string, mode os.FileMode) {
	full := c.path(p)
	b, err := os.ReadFile(full)
	switch {
	case errors.Is(err, os.ErrPermission) && deniedToCaller(full):
		// As on a real host: the attribute is root's and its mode
		// shuts this user out (a view that shows the driver's owner).
	case err != nil:
		c.fail("read %s: %v", p, err)
		return
	case string(b) != want:
		c.fail("%s = %q, want %q", p, b, want)
	}
	st, err := os.Stat(full)
	if err != nil {
		c.fail("stat %s: %v", p, err)
		return
	}
	if st.Mode().Perm() != mode {
		c.fail("%s mode %v, want %v", p, st.Mode().Perm(), mode)
	}
}

// deniedToCaller reports whether the mode and owner of the file at p
// forbid this process to read it.
func deniedToCaller(p string) bool {
	st, err := os.Stat(p)
	if err != nil || os.Geteuid() == 0 {
		return false
	}
	bit := os.FileMode(0o004)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) == os.Geteuid() {
		bit = 0o400
	}
	return st.Mode().Perm()&bit == 0
}

func (c *checker) link(p, want string) {
	got, err := os.Readlink(c.path(p))
	if err != nil || got != want {
		c.fail("readlink %s = %q (%v), want %q", p, got, err, want)
	}
}

func (c *checker) sysfs() {
	p := c.inst.Product
	c.file("sys/module/neuron/version", "2.25.4.0\n", 0o444)
	for _, a := range []string{"node_id_2", "node_id_4"} {
		c.file("sys/class/neuron_device/"+a, "-1\n", 0o444)
	}
	for _, a := range []string{"server_id_2", "server_id_4"} {
		c.file("sys/class/neuron_device/"+a, "0000000000000000\n", 0o444)
	}
	c.file("sys/class/neuron_device/ultraserver_mode", "\n", 0o444)
	for i := 0; i < c.inst.Devices; i++ {
		name := fmt.Sprintf("neuron%d", i)
		c.link("sys/class/neuron_device/"+name, "../../devices/virtual/neuron_device/"+name)
		base := "sys/devices/virtual/neuron_device/" + name + "/"
		c.file(base+"reset", "1\n", 0o600)
		c.file(base+"core_count", fmt.Sprint(c.facts.CoresPerDevice), 0o400)
		var nb []string
		for _, n := range c.inst.Neighbours(i) {
			nb = append(nb, fmt.Sprint(n))
		}
		c.file(base+"connected_devices", strings.Join(nb, ", ")+"\n", 0o400)
		c.file(base+"info/serial_number", fmt.Sprintf("%016x\n", c.inst.SerialNumber(i)), 0o644)
		c.file(base+"info/notify_delay", "-1\n", 0o644)
		c.file(base+"info/architecture/arch_type", p.NDArchType+"\n", 0o644)
		c.file(base+"info/architecture/instance_type", p.InstanceType+"\n", 0o644)
		c.file(base+"info/architecture/device_name", p.DeviceName+"\n", 0o644)
		for core := 0; core < c.facts.CoresPerDevice; core++ {
			c.file(fmt.Sprintf("%sneuron_core%d/info/architecture/arch_type", base, core), p.NCArchType+"\n", 0o644)
		}
		c.link(base+"subsystem", "../../../../class/neuron_device")
		c.metrics(base)
	}
}

// metrics checks the stats tree of one device right after start: the
// probe reset counted once on every core, nothing else happened yet.
func (c *checker) metrics(base string) {
	for core := 0; core < c.facts.CoresPerDevice; core++ {
		nc := fmt.Sprintf("%sneuron_core%d/stats/", base, core)
		c.file(nc+"other_info/reset_req_count/total", "1\n", 0o644)
		c.file(nc+"other_info/reset_req_count/present", "1\n", 0o644)
		c.file(nc+"other_info/reset_fail_count/total", "0\n", 0o644)
		for _, name := range []string{"success", "failure", "timeout", "hw_repairable_hbm_ue_error"} {
			c.file(nc+"status/"+name+"/total", "0\n", 0o644)
		}
		for _, p := range []string{"memory_usage/host_mem", "memory_usage/device_mem", "memory_usage/device_mem/tensors", "memory_usage/device_mem/uncategorized"} {
			c.file(nc+p+"/peak", "0\n", 0o644)
		}
		c.file(nc+"tensor_engine/pe_cntrs", "xrow_grp,mm_active,wl_active,idle\n0,0,0,0\n1,0,0,0\n2,0,0,0\n3,0,0,0\n", 0o644)
	}
	for _, cat := range []string{"dma_buffers", "tensors", "constants", "application_memory", "driver_memory", "notifications", "dma_rings", "uncategorized"} {
		c.file(base+"stats/memory_usage/host_mem/"+cat+"/total", "0\n", 0o644)
	}
	for _, hw := range []string{"sram_ecc_uncorrected", "mem_ecc_uncorrected", "mem_ecc_repairable_uncorrected"} {
		c.file(base+"stats/hardware/"+hw, "0\n", 0o644)
	}
	// NO_DATA and zeros until the first minute's roll-up, then VALID with
	// what the minute saw (a check on a slow machine can outlast it).
	if b, err := os.ReadFile(c.path(base + "stats/power/utilization")); err != nil || !powerLine.Match(b) ||
		strings.HasPrefix(string(b), "POWER_STATUS_NO_DATA,") && !strings.HasSuffix(string(b), ",0.00,0.00,0.00\n") {
		c.fail("%sstats/power/utilization = %q (%v)", base, b, err)
	}
}

// powerLine is stats/power/utilization: status, time, min, max, average.
var powerLine = regexp.MustCompile(`^POWER_STATUS_(NO_DATA|VALID),[0-9]+,[0-9]+\.[0-9]{2},[0-9]+\.[0-9]{2},[0-9]+\.[0-9]{2}\n$`)

// device checks every discovery ioctl on device i.
func (c *checker) device(i int) {
	path := c.path(fmt.Sprintf("dev/neuron%d", i))
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		c.fail("open %s: %v", path, err)
		return
	}
	defer unix.Close(fd)
	for _, check := range []func(fd, i int){c.deviceInfo, c.deviceBDF, c.deviceVersions, c.deviceHostIDs, c.deviceNCMap} {
		check(fd, i)
	}
}

// deviceInfo checks DEVICE_BASIC_INFO and DEVICE_INFO.
func (c *checker) deviceInfo(fd, i int) {
	arch := uint32(c.inst.Product.Arch)
	var basic ioctl.DeviceBasicInfo
	call(c, fd, i, "DEVICE_BASIC_INFO", ioctl.CmdDeviceBasicInfo, &basic, 0)
	if basic.Architecture != arch || basic.Revision != 0 {
		c.fail("neuron%d DEVICE_BASIC_INFO = %+v", i, basic)
	}

	info := ioctl.DeviceInfo{BARAddress: [2]uint64{7, 7}, BARSize: [2]uint64{7, 7}}
	call(c, fd, i, "DEVICE_INFO", ioctl.CmdDeviceInfo, &info, 0)
	nb := c.inst.Neighbours(i)
	if info.Architecture != arch || info.ConnectedDeviceCount != uint32(len(nb)) {
		c.fail("neuron%d DEVICE_INFO arch %d count %d, want %d %d", i, info.Architecture, info.ConnectedDeviceCount, arch, len(nb))
	}
	for k, n := range nb {
		if info.ConnectedDevices[k] != n {
			c.fail("neuron%d DEVICE_INFO connected[%d] = %d, want %d", i, k, info.ConnectedDevices[k], n)
		}
	}
	if info.BARAddress[0] < 0xffff800000000000 || info.BARSize[0] != c.facts.BAR0Size || info.BARAddress[1] != 0 || info.BARSize[1] != 0 {
		c.fail("neuron%d DEVICE_INFO bars %#x %#x", i, info.BARAddress, info.BARSize)
	}
}

// deviceBDF checks DEVICE_BDF and DEVICE_BDF_EXT, whose index is relative
// to the fd's device.
func (c *checker) deviceBDF(fd, i int) {
	want := c.inst.BDFs[i]
	var bdf ioctl.DeviceBDF
	call(c, fd, i, "DEVICE_BDF", ioctl.CmdDeviceBDF, &bdf, 0)
	if bdf.BusNumber != want.Bus || bdf.Slot != want.Slot || bdf.Func != want.Func {
		c.fail("neuron%d DEVICE_BDF = %+v, want %v", i, bdf, want)
	}
	ext := ioctl.DeviceBDFExt{NDIndex: 0}
	call(c, fd, i, "DEVICE_BDF_EXT", ioctl.CmdDeviceBDFExt, &ext, 0)
	if ext.Domain != want.Domain || ext.BusNumber != want.Bus || ext.Slot != want.Slot || ext.Func != want.Func {
		c.fail("neuron%d DEVICE_BDF_EXT = %+v, want %v", i, ext, want)
	}
	// Relative to this fd's device: the last device is reached from here.
	last := c.inst.Devices - 1
	ext = ioctl.DeviceBDFExt{NDIndex: uint32(last - i)}
	call(c, fd, i, "DEVICE_BDF_EXT(last)", ioctl.CmdDeviceBDFExt, &ext, 0)
	if ext.BusNumber != c.inst.BDFs[last].Bus || ext.Slot != c.inst.BDFs[last].Slot {
		c.fail("neuron%d DEVICE_BDF_EXT(+%d) = %+v, want %v", i, last-i, ext, c.inst.BDFs[last])
	}
	ext = ioctl.DeviceBDFExt{NDIndex: uint32(c.inst.Devices - i)}
	call(c, fd, i, "DEVICE_BDF_EXT(past end)", ioctl.CmdDeviceBDFExt, &ext, unix.EINVAL)
}

// deviceVersions checks COMPATIBLE_VERSION and DRIVER_INFO_GET.
func (c *checker) deviceVersions(fd, i int) {
	arch := uint32(c.inst.Product.Arch)
	var cv ioctl.CompatibleVersion
	call(c, fd, i, "COMPATIBLE_VERSION", ioctl.CmdCompatibleVersion, &cv, 0)
	// Driver 2.25.4.0: Trn1/Inf2 runtimes 5-7, Trn2/Trn3 10-11.
	wantMin, wantMax := uint32(10), uint32(11)
	if c.inst.Product.Arch == dhal.V2 {
		wantMin, wantMax = 5, 7
	}
	if cv.Max != wantMax || cv.Min != wantMin {
		c.fail("neuron%d COMPATIBLE_VERSION = %+v", i, cv)
	}

	var di ioctl.DeviceDriverInfo
	call(c, fd, i, "DRIVER_INFO_GET", ioctl.CmdDriverInfoGet, &di, 0)
	if di != (ioctl.DeviceDriverInfo{Architecture: arch, Size: 24, FeatureFlags1: 0x1ff}) {
		c.fail("neuron%d DRIVER_INFO_GET = %+v", i, di)
	}
}

// deviceHostIDs checks HOST_DEVICE_ID, its RID map and DEVICE_APP_PID.
func (c *checker) deviceHostIDs(fd, i int) {
	var hid ioctl.HostDeviceID
	call(c, fd, i, "HOST_DEVICE_ID", ioctl.CmdHostDeviceID, &hid, 0)
	if hid.HostDeviceID != uint32(i) {
		c.fail("neuron%d HOST_DEVICE_ID = %d", i, hid.HostDeviceID)
	}

	var rid ioctl.HostDeviceIDToRIDMap
	call(c, fd, i, "HOST_DEVICE_ID_TO_RID_MAP", ioctl.CmdHostDeviceIDToRIDMap, &rid, 0)
	if rid.Count != uint32(c.inst.Devices) {
		c.fail("neuron%d RID map count %d", i, rid.Count)
	}
	for k, v := range c.inst.RIDMap() {
		if rid.HostDIDToRIDMap[k] != v {
			c.fail("neuron%d RID map[%d] = %d, want %d", i, k, rid.HostDIDToRIDMap[k], v)
		}
	}

	var pid int32
	call(c, fd, i, "DEVICE_APP_PID", ioctl.CmdDeviceAppPID, &pid, 0)
	if pid != int32(os.Getpid()) {
		c.fail("neuron%d DEVICE_APP_PID = %d, want %d", i, pid, os.Getpid())
	}
}

// deviceNCMap checks GET_LOGICAL_TO_PHYSICAL_NC_MAP (absent on v2).
func (c *checker) deviceNCMap(fd, i int) {
	entries := make([]ioctl.NCMapEntry, dhal.NCMapEntries)
	l2p := ioctl.GetLogicalToPhysicalNCMap{MaxMapEntries: dhal.NCMapEntries}
	hdr, err := OffHeap(4 + 8*dhal.NCMapEntries)
	if err != nil {
		c.fail("mmap: %v", err)
		return
	}
	defer unix.Munmap(hdr)
	l2p.Map = uint64(addrOf(hdr))
	if c.inst.Product.Arch == dhal.V2 {
		call(c, fd, i, "GET_LOGICAL_TO_PHYSICAL_NC_MAP", ioctl.CmdGetLogicalToPhysicalNCMap, &l2p, ioctl.ENOTSUPP)
		return
	}
	call(c, fd, i, "GET_LOGICAL_TO_PHYSICAL_NC_MAP", ioctl.CmdGetLogicalToPhysicalNCMap, &l2p, 0)
	decodeNCMap(hdr, entries)
	if n := le32(hdr); n != dhal.NCMapEntries {
		c.fail("NC map num_entries %d", n)
	}
	for dev := 0; dev < 16; dev++ {
		row, _ := dhal.LogicalToPhysicalNC(c.inst.Product.Arch, dev, false)
		for nc, phys := range row {
			e := entries[dev*8+nc]
			if e.DeviceID != uint32(dev) || e.DeviceNCIdx != phys {
				c.fail("NC map[%d][%d] = %+v, want {%d %d}", dev, nc, e, dev, phys)
			}
		}
	}
}

// call issues one ioctl on device i and records a mismatch of the result.
func call[T any](c *checker, fd, i int, name string, cmd uint32, arg *T, want unix.Errno) {
	r, e := Ioctl(fd, cmd, arg)
	if e != want || (want == 0 && r != 0) {
		c.fail("neuron%d %s: ioctl = %d, %v; want 0, %v", i, name, r, e, want)
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func decodeNCMap(b []byte, out []ioctl.NCMapEntry) {
	for k := range out {
		out[k] = ioctl.NCMapEntry{DeviceID: le32(b[4+8*k:]), DeviceNCIdx: le32(b[8+8*k:])}
	}
}

// others checks the remaining implemented commands on device 0, and the
// free-access lane.
func (c *checker) others() {
	path := c.path("dev/neuron0")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		c.fail("open %s: %v", path, err)
		return
	}
	defer unix.Close(fd)
	mem, err := OffHeap(4096)
	if err != nil {
		c.fail("mmap: %v", err)
		return
	}
	defer unix.Munmap(mem)
	c.othersState(fd, mem)
	c.othersInit(fd)
	c.othersNotifications(fd)
	c.othersReset(fd)
	c.freeAccessLane(path)
}

// expect records a mismatch of an ioctl's result r, e against want.
func (c *checker) expect(name string, r int, e unix.Errno, want unix.Errno) {
	if e != want || (want == 0 && r != 0) || (want != 0 && r != -1) {
		c.fail("%s: ioctl = %d, %v; want %v", name, r, e, want)
	}
}

// othersState checks the commands that report or log the device's state,
// with mem as the caller's buffer.
func (c *checker) othersState(fd int, mem []byte) {
	hdr := (*ioctl.GetAppsInfo)(ptr(mem))
	*hdr = ioctl.GetAppsInfo{Capacity: 16}
	r, e := IoctlAddr(fd, ioctl.CmdDeviceGetAllAppsInfo, addrOf(mem))
	c.expect("DEVICE_GET_ALL_APPS_INFO", r, e, 0)
	app := (*ioctl.AppInfo)(ptr(mem[16:]))
	if hdr.Size != 1 || app.PID != int32(os.Getpid()) || app.NCLockMap != 0 {
		c.fail("DEVICE_GET_ALL_APPS_INFO: %d entries, first %+v; want 1 for pid %d", hdr.Size, app, os.Getpid())
	}

	dump := ioctl.NCPIDStateDump{NCID: 1}
	r, e = Ioctl(fd, ioctl.CmdNCPIDStateDump, &dump)
	c.expect("NC_PID_STATE_DUMP", r, e, 0)
	dump.NCID = 512
	r, e = Ioctl(fd, ioctl.CmdNCPIDStateDump, &dump)
	c.expect("NC_PID_STATE_DUMP(512)", r, e, unix.ENOENT)

	copy(mem, "neuronfs check\x00")
	pk := ioctl.Printk{Buffer: uint64(addrOf(mem)), Size: 15}
	r, e = Ioctl(fd, ioctl.CmdPrintk, &pk)
	c.expect("PRINTK", r, e, 0)
	pk.Size = 14
	r, e = Ioctl(fd, ioctl.CmdPrintk, &pk)
	c.expect("PRINTK(no NUL)", r, e, unix.EBADMSG)

	mc := ioctl.MetricsCtrl{Mode: 0}
	r, e = Ioctl(fd, ioctl.CmdMetricsCtrl, &mc)
	c.expect("METRICS_CTRL", r, e, 0)
}

// othersInit checks the initialization and release commands, which leave
// the caller's memory alone.
func (c *checker) othersInit(fd int) {
	words := [2]uint32{0xaaaa5555, 0x5555aaaa}
	r, e := Ioctl(fd, ioctl.CmdDeviceInit, &words)
	c.expect("DEVICE_INIT", r, e, 0)
	if words != [2]uint32{0xaaaa5555, 0x5555aaaa} {
		c.fail("DEVICE_INIT changed the caller's memory: %#x", words)
	}
	r, e = Ioctl(fd, ioctl.CmdDMAEngInit, &words)
	c.expect("DMA_ENG_INIT", r, e, 0)
	if words != [2]uint32{0xaaaa5555, 0x5555aaaa} {
		c.fail("DMA_ENG_INIT changed the caller's memory: %#x", words)
	}
	r, e = IoctlAddr(fd, ioctl.CmdDeviceRelease, 0)
	c.expect("DEVICE_RELEASE", r, e, 0)
	var qr ioctl.DMAQueueRelease
	r, e = Ioctl(fd, ioctl.CmdDMAQueueRelease, &qr)
	c.expect("DMA_QUEUE_RELEASE", r, e, 0)
}

// othersNotifications checks the notification-queue commands.
func (c *checker) othersNotifications(fd int) {
	var nd ioctl.NotificationsDestroy
	r, e := Ioctl(fd, ioctl.CmdNotificationsDestroyV1, &nd)
	c.expect("NOTIFICATIONS_DESTROY_V1", r, e, 0)
	nq := ioctl.NotificationsInitV2{NQType: 1, Size: 4096, OnHostMemory: 1}
	r, e = Ioctl(fd, ioctl.CmdNotificationsInitV2, &nq)
	c.expect("NOTIFICATIONS_INIT_V2", r, e, 0)
	if e == 0 {
		if ring, err := unix.Mmap(fd, int64(nq.MmapOffset), 4096, unix.PROT_READ, unix.MAP_SHARED); err != nil {
			c.fail("mmap notification ring at %#x: %v", nq.MmapOffset, err)
		} else {
			unix.Munmap(ring)
		}
	}
	var qi ioctl.NotificationsQueueInfo
	r, e = Ioctl(fd, ioctl.CmdNotificationsQueueInfo, &qi)
	c.expect("NOTIFICATIONS_QUEUE_INFO", r, e, unix.EPERM)
	var qq ioctl.DMAQuiesceQueues
	r, e = Ioctl(fd, ioctl.CmdDMAQuiesceQueues, &qq)
	c.expect("DMA_QUIESCE_QUEUES", r, e, unix.ENOTTY)
}

// othersReset checks DEVICE_RESET_STATUS and the refused DRIVER_INFO_SET.
func (c *checker) othersReset(fd int) {
	status := uint8(0)
	r, e := Ioctl(fd, ioctl.CmdDeviceResetStatus, &status)
	c.expect("DEVICE_RESET_STATUS", r, e, 0)
	if status != 1 {
		c.fail("DEVICE_RESET_STATUS = %d, want 1", status)
	}
	var di ioctl.DeviceDriverInfo
	r, e = Ioctl(fd, ioctl.CmdDriverInfoSet, &di)
	c.expect("DRIVER_INFO_SET", r, e, ioctl.ENOTSUPP)
}

// freeAccessLane checks that a write-only open reaches only the commands
// the driver lets any opener use.
func (c *checker) freeAccessLane(path string) {
	wo, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.fail("open O_WRONLY: %v", err)
		return
	}
	defer unix.Close(wo)
	var info ioctl.DeviceInfo
	r, e := Ioctl(wo, ioctl.CmdDeviceInfo, &info)
	c.expect("DEVICE_INFO on O_WRONLY", r, e, unix.EINVAL)
	var cv ioctl.CompatibleVersion
	r, e = Ioctl(wo, ioctl.CmdCompatibleVersion, &cv)
	c.expect("COMPATIBLE_VERSION on O_WRONLY", r, e, 0)
}
