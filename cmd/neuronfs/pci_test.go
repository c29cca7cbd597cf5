package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

func init() {
	clients["pci"] = pciClient
}

// pciFunction is what node-feature-discovery and lspci read of one
// /sys/bus/pci/devices entry.
type pciFunction struct {
	slot                                 string
	vendor, device, subVendor, subDevice uint64
	class, revision                      uint64
	config                               []byte
	resource                             [][3]uint64
	driver                               string
	uevent                               map[string]string
	dir                                  string // the link's target, resolved
}

func readPCIFunction(slot string) (pciFunction, error) {
	base := filepath.Join("/sys/bus/pci/devices", slot)
	f := pciFunction{slot: slot, uevent: map[string]string{}}
	hex := func(name string, into *uint64) error {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			return err
		}
		*into, err = strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 64)
		return err
	}
	for name, into := range map[string]*uint64{"vendor": &f.vendor, "device": &f.device, "subsystem_vendor": &f.subVendor,
		"subsystem_device": &f.subDevice, "class": &f.class, "revision": &f.revision} {
		if err := hex(name, into); err != nil {
			return f, fmt.Errorf("%s/%s: %v", slot, name, err)
		}
	}
	var err error
	if f.config, err = os.ReadFile(filepath.Join(base, "config")); err != nil {
		return f, err
	}
	res, err := os.ReadFile(filepath.Join(base, "resource"))
	if err != nil {
		return f, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		var r [3]uint64
		if _, err := fmt.Sscanf(line, "0x%x 0x%x 0x%x", &r[0], &r[1], &r[2]); err != nil {
			return f, fmt.Errorf("%s/resource %q: %v", slot, line, err)
		}
		f.resource = append(f.resource, r)
	}
	if l, err := os.Readlink(filepath.Join(base, "driver")); err == nil {
		f.driver = filepath.Base(l)
	}
	ue, err := os.ReadFile(filepath.Join(base, "uevent"))
	if err != nil {
		return f, err
	}
	sc := bufio.NewScanner(bytes.NewReader(ue))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			f.uevent[k] = v
		}
	}
	f.dir, err = filepath.EvalSymlinks(base)
	return f, err
}

// check compares the function's files with each other: the config space
// carries the same ids, class, revision and BARs as the text files.
func (f pciFunction) check() error {
	le := binary.LittleEndian
	c := f.config
	// Without CAP_SYS_ADMIN (CMD runs as root or as nobody here) the
	// kernel shows the first 64 bytes only.
	if want := map[bool]int{true: 4096, false: 64}[os.Geteuid() == 0]; len(c) != want {
		return fmt.Errorf("%s: config is %d bytes, want %d", f.slot, len(c), want)
	}
	if st, err := os.Stat(filepath.Join("/sys/bus/pci/devices", f.slot, "config")); err != nil || st.Size() != 4096 {
		return fmt.Errorf("%s: config stat %v %v", f.slot, st, err)
	}
	if uint64(le.Uint16(c[0:])) != f.vendor || uint64(le.Uint16(c[2:])) != f.device ||
		uint64(c[8]) != f.revision || uint64(le.Uint32(c[8:]))>>8 != f.class || c[0x0e] != 0 ||
		uint64(le.Uint16(c[0x2c:])) != f.subVendor || uint64(le.Uint16(c[0x2e:])) != f.subDevice {
		return fmt.Errorf("%s: config % x disagrees with the id files %+v", f.slot, c[:0x30], f)
	}
	if le.Uint16(c[4:])&0x2 == 0 {
		return fmt.Errorf("%s: memory space not enabled in command %#x", f.slot, le.Uint16(c[4:]))
	}
	for bar := 0; bar < 6; bar++ {
		r := f.resource[bar]
		low := le.Uint32(c[0x10+4*bar:])
		if r[0] == 0 {
			continue
		}
		if low&0x6 != 0x4 {
			return fmt.Errorf("%s: BAR%d %#x is not 64-bit memory", f.slot, bar, low)
		}
		addr := uint64(low&0xfffffff0) | uint64(le.Uint32(c[0x14+4*bar:]))<<32
		if addr != r[0] || (low&0x8 != 0) != (r[2]&0x2000 != 0) {
			return fmt.Errorf("%s: BAR%d config %#x, resource %#x flags %#x", f.slot, bar, addr, r[0], r[2])
		}
	}
	want := map[string]string{
		"DRIVER":        "neuron-driver",
		"PCI_CLASS":     fmt.Sprintf("%X", f.class),
		"PCI_ID":        fmt.Sprintf("%04X:%04X", f.vendor, f.device),
		"PCI_SUBSYS_ID": fmt.Sprintf("%04X:%04X", f.subVendor, f.subDevice),
		"PCI_SLOT_NAME": f.slot,
		"MODALIAS": fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X", f.vendor, f.device,
			f.subVendor, f.subDevice, f.class>>16, f.class>>8&0xff, f.class&0xff),
	}
	for k, v := range want {
		if f.uevent[k] != v {
			return fmt.Errorf("%s: uevent %s=%q, want %q", f.slot, k, f.uevent[k], v)
		}
	}
	if f.driver != "neuron-driver" {
		return fmt.Errorf("%s: driver %q", f.slot, f.driver)
	}
	bound, err := filepath.EvalSymlinks(filepath.Join("/sys/bus/pci/drivers/neuron-driver", f.slot))
	if err != nil || bound != f.dir {
		return fmt.Errorf("%s: the driver's link resolves to %q (%v), the bus's to %q", f.slot, bound, err, f.dir)
	}
	return nil
}

// pciClient finds the devices inside run the way node-feature-discovery
// does (every /sys/bus/pci/devices entry's vendor and class) and checks
// each against what the driver says of the same device.
func pciClient() int {
	fail := clientFail
	inst, err := dhal.LookupInstance(os.Getenv("NEURONFS_INSTANCE"))
	if err != nil {
		return fail("%v", err)
	}
	entries, err := os.ReadDir("/sys/bus/pci/devices")
	if err != nil {
		return fail("%v", err)
	}
	found := map[string]pciFunction{}
	for _, e := range entries {
		f, err := readPCIFunction(e.Name())
		if err != nil {
			return fail("%v", err)
		}
		if f.vendor == 0x1d0f && f.class>>8 == 0x0880 {
			if err := f.check(); err != nil {
				return fail("%v", err)
			}
			found[f.slot] = f
		}
	}
	if len(found) != inst.Devices {
		return fail("%d Neuron functions, want %d", len(found), inst.Devices)
	}
	for i := 0; i < inst.Devices; i++ {
		node := fmt.Sprintf("/dev/neuron%d", i)
		fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail("open %s: %v", node, err)
		}
		var bdf ioctl.DeviceBDF
		var info ioctl.DeviceInfo
		r1, e1 := testutil.Ioctl(fd, ioctl.CmdDeviceBDF, &bdf)
		r2, e2 := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info)
		unix.Close(fd)
		if r1 != 0 || e1 != 0 || r2 != 0 || e2 != 0 {
			return fail("%s: DEVICE_BDF %d %v, DEVICE_INFO %d %v", node, r1, e1, r2, e2)
		}
		slot := fmt.Sprintf("0000:%02x:%02x.%x", bdf.BusNumber, bdf.Slot, bdf.Func)
		f, ok := found[slot]
		if !ok {
			return fail("%s: DEVICE_BDF %s is not among the PCI functions", node, slot)
		}
		if f.device != uint64(inst.Product.PCIDevice) || uint64(info.Revision) != f.revision {
			return fail("%s: function %s device %#x revision %#x, DEVICE_INFO revision %d", node, slot, f.device, f.revision, info.Revision)
		}
		if size := f.resource[0][1] - f.resource[0][0] + 1; size != info.BARSize[0] {
			return fail("%s: BAR0 of %#x bytes, DEVICE_INFO says %#x", node, size, info.BARSize[0])
		}
		if want := "/sys/devices/pci0000:" + slot[5:7] + "/" + slot; f.dir != want {
			return fail("%s: function directory %s, want %s", node, f.dir, want)
		}
	}
	// The driver and its module link to each other.
	if dir, err := filepath.EvalSymlinks("/sys/module/neuron/drivers/pci:neuron-driver"); err != nil || dir != "/sys/bus/pci/drivers/neuron-driver" {
		return fail("the module's driver link resolves to %q (%v)", dir, err)
	}
	if dir, err := filepath.EvalSymlinks("/sys/bus/pci/drivers/neuron-driver/module"); err != nil || dir != "/sys/module/neuron" {
		return fail("the driver's module link resolves to %q (%v)", dir, err)
	}
	// The class device stays a virtual device, as the driver creates it.
	if dir, err := filepath.EvalSymlinks("/sys/class/neuron_device/neuron0"); err != nil || dir != "/sys/devices/virtual/neuron_device/neuron0" {
		return fail("neuron0 is at %q (%v)", dir, err)
	}
	if lspci := os.Getenv("NEURONFS_LSPCI"); lspci != "" {
		out, err := exec.Command(lspci, "-n", "-D").Output()
		if err != nil {
			return fail("lspci: %v", err)
		}
		var listed []string
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[1] == "0880:" && strings.HasPrefix(f[2], "1d0f:") {
				if f[2] != fmt.Sprintf("1d0f:%04x", inst.Product.PCIDevice) {
					return fail("lspci: %q", line)
				}
				listed = append(listed, f[0])
			}
		}
		var want []string
		for s := range found {
			want = append(want, s)
		}
		sort.Strings(want)
		sort.Strings(listed)
		if strings.Join(listed, " ") != strings.Join(want, " ") {
			return fail("lspci lists %v, want %v:\n%s", listed, want, out)
		}
	}
	fmt.Println("pci ok")
	return 0
}

// Inside run, every instance profile's devices are PCI functions bound to
// the driver, beside the host's, with ids, class, revision, config space
// and BARs consistent with each other and with the driver's ioctls, and
// lspci lists them.
func TestRunPCIFunctions(t *testing.T) {
	testutil.RequireFUSE(t)
	lspci, err := exec.LookPath("lspci")
	if err != nil {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("lspci (pciutils) is needed for this test: %v", err)
		}
		t.Logf("no lspci, checking sysfs only: %v", err)
	}
	type run struct{ name, inst, user, bin string }
	var runs []run
	for _, inst := range dhal.InstanceNames() {
		runs = append(runs, run{inst, inst, "0", os.Args[0]})
	}
	// An unprivileged reader sees the config header only.
	runs = append(runs, run{"trn2.3xlarge-as-nobody", "trn2.3xlarge", "65534", clientCopy(t)})
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			inst := r.inst
			before := hostView(t)
			cmd := neuronfs(t, "run", "--instance", inst, "--revision", "3", "--uid", r.user, "--gid", r.user, "--", r.bin, "__client", "pci")
			cmd.Env = append(cmd.Env, "NEURONFS_INSTANCE="+inst, "NEURONFS_LSPCI="+lspci)
			if out, err := cmd.Output(); err != nil || string(out) != "pci ok\n" {
				t.Fatalf("%v %q", err, out)
			}
			if after := hostView(t); after != before {
				t.Fatalf("host changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}
