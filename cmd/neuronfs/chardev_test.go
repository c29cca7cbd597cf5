package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

func init() {
	clients["chardev"] = chardevClient
}

// neuronMajor reads the neuron line of /proc/devices.
func neuronMajor() (uint32, error) {
	f, err := os.Open("/proc/devices")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[1] == "neuron" {
			n, err := strconv.Atoi(fields[0])
			return uint32(n), err
		}
	}
	return 0, fmt.Errorf("no neuron line in /proc/devices")
}

// chardevClient checks, inside run, what device-counting programs check.
func chardevClient() int {
	fail := clientFail
	inst, err := dhal.LookupInstance(os.Getenv("NEURONFS_INSTANCE"))
	if err != nil {
		return fail("%v", err)
	}
	major, err := neuronMajor()
	if err != nil {
		return fail("%v", err)
	}
	k := min(3, inst.Devices-1) // the device checked in detail
	node := fmt.Sprintf("/dev/neuron%d", k)
	name := fmt.Sprintf("neuron%d", k)
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != major || unix.Minor(st.Rdev) != uint32(k) || st.Mode&0o777 != 0o666 {
		return fail("stat %s: %+v %v", node, st, err)
	}
	basicInfo := func(path string, fd int) error {
		var bi ioctl.DeviceBasicInfo
		if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture != uint32(inst.Product.Arch) {
			return fmt.Errorf("%s: DEVICE_BASIC_INFO %d %v %+v", path, r, e, bi)
		}
		return nil
	}
	fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open %s: %v", node, err)
	}
	if err := basicInfo(node, fd); err != nil {
		return fail("%v", err)
	}
	// The opener is this process, not the daemon that opened the node.
	var pid int32
	if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceAppPID, &pid); r != 0 || e != 0 || pid != int32(os.Getpid()) {
		return fail("DEVICE_APP_PID %d (%v), want %d", pid, e, os.Getpid())
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil || fst != st {
		return fail("fstat %+v differs from stat %+v (%v)", fst, st, err)
	}
	var fst2 unix.Stat_t
	if err := unix.Fstatat(fd, "", &fst2, unix.AT_EMPTY_PATH); err != nil || fst2 != st {
		return fail("newfstatat(AT_EMPTY_PATH) %+v (%v)", fst2, err)
	}
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &stx); err != nil || stx.Rdev_major != major || stx.Rdev_minor != uint32(k) || stx.Mode&unix.S_IFMT != unix.S_IFCHR {
		return fail("statx(AT_EMPTY_PATH) %+v (%v)", stx, err)
	}
	unix.Close(fd)

	// Relative to the cwd, relative to a dirfd, through a symlink.
	if err := os.Chdir("/dev"); err != nil {
		return fail("%v", err)
	}
	dirfd, _ := unix.Open("/dev", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	link := filepath.Join(os.TempDir(), fmt.Sprintf("neuron-link-%d", os.Getpid()))
	os.Symlink(node, link)
	defer os.Remove(link)
	for _, open := range []struct {
		name string
		f    func() (int, error)
	}{
		{"cwd-relative", func() (int, error) { return unix.Open(name, unix.O_RDWR, 0) }},
		{"dotdot", func() (int, error) { return unix.Open("../dev/./"+name, unix.O_RDWR, 0) }},
		{"dirfd", func() (int, error) { return unix.Openat(dirfd, name, unix.O_RDWR, 0) }},
		{"symlink", func() (int, error) { return unix.Open(link, unix.O_RDWR, 0) }},
		{"openat2", func() (int, error) {
			return unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_RDWR})
		}},
	} {
		fd, err := open.f()
		if err != nil {
			return fail("%s open: %v", open.name, err)
		}
		if err := basicInfo(open.name, fd); err != nil {
			return fail("%v", err)
		}
		unix.Close(fd)
	}
	// O_NOFOLLOW on the symlink is ELOOP as always; O_PATH works natively.
	if _, err := unix.Open(link, unix.O_RDWR|unix.O_NOFOLLOW, 0); err != unix.ELOOP {
		return fail("O_NOFOLLOW on a symlink: %v", err)
	}
	if fd, err := unix.Open(node, unix.O_PATH, 0); err != nil {
		return fail("O_PATH open: %v", err)
	} else {
		unix.Close(fd)
	}
	// Other files are untouched.
	if err := os.WriteFile("/dev/null", []byte("x"), 0); err != nil {
		return fail("/dev/null: %v", err)
	}
	if b, err := os.ReadFile("/proc/self/comm"); err != nil || len(b) == 0 {
		return fail("ordinary read: %v", err)
	}
	// Device count by walking /dev, as device plugins do.
	found := 0
	filepath.WalkDir("/dev", func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type()&fs.ModeCharDevice != 0 {
			var s unix.Stat_t
			if unix.Lstat(p, &s) == nil && unix.Major(s.Rdev) == major {
				found++
			}
		}
		return nil
	})
	if found != inst.Devices {
		return fail("walking /dev found %d devices, want %d", found, inst.Devices)
	}
	if target, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/char/%d:%d", major, k)); err != nil || target != "/sys/devices/virtual/neuron_device/"+name {
		return fail("/sys/dev/char/%d:%d -> %q (%v)", major, k, target, err)
	}
	if b, err := os.ReadFile("/sys/class/dmi/id/product_name"); err != nil || string(b) != inst.Name+"\n" {
		return fail("product_name %q (%v)", b, err)
	}
	// Many threads opening devices at once.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			goruntime.LockOSThread()
			defer goruntime.UnlockOSThread()
			path := fmt.Sprintf("/dev/neuron%d", i%inst.Devices)
			fd, err := unix.Open(path, unix.O_RDWR, 0)
			if err != nil {
				errs <- fmt.Errorf("%s: %v", path, err)
				return
			}
			defer unix.Close(fd)
			if err := basicInfo(path, fd); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return fail("threads: %v", err)
	}
	fmt.Println("go ok")
	return 0
}

// Inside run, every instance profile shows character devices.
func TestRunCharacterDevices(t *testing.T) {
	for _, inst := range dhal.InstanceNames() {
		t.Run(inst, func(t *testing.T) {
			// hostView covers the neuron entries of /dev and /sys, the
			// mounts there and the neuron lines of /proc/devices: what
			// run could change, not what other programs change meanwhile.
			before := hostView(t)
			cmd := neuronfs(t, "run", "--instance", inst, "--", os.Args[0], "__client", "chardev")
			cmd.Env = append(cmd.Env, "NEURONFS_INSTANCE="+inst)
			if out, err := cmd.Output(); err != nil || string(out) != "go ok\n" {
				t.Fatalf("Go client: %v %q", err, out)
			}
			if after := hostView(t); after != before {
				t.Fatalf("host changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestRunCharacterDevicesPythonAndC(t *testing.T) {
	testutil.RequireFUSE(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for this test: %v", err)
	}
	script, _ := filepath.Abs("testdata/chardev_check.py")
	cmd := neuronfs(t, "run", "--instance", "trn2.48xlarge", "--", py, script, "16", "trn2.48xlarge")
	if out, err := cmd.Output(); err != nil || string(out) != "python ok\n" {
		t.Fatalf("python: %v %q", err, out)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("a C compiler is needed for this test: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "chardev_check")
	if out, err := exec.Command(cc, "-O2", "-o", bin, "testdata/chardev_check.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	cmd = neuronfs(t, "run", "--instance", "inf2.48xlarge", "--", bin)
	if out, err := cmd.Output(); err != nil || string(out) != "c ok\n" {
		t.Fatalf("C: %v %q", err, out)
	}
}

// The filter is installed before CMD drops to the user and without
// no_new_privs: setuid programs still gain their privileges, and children
// of CMD still see the devices.
func TestRunSetuidAndChildren(t *testing.T) {
	testutil.RequireFUSE(t)
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("a C compiler is needed for this test: %v", err)
	}
	dir, err := os.MkdirTemp("", "neuronfs-setuid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "whoami")
	if out, err := exec.Command(cc, "-o", bin, "testdata/whoami.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	cmd := neuronfs(t, "run", "--uid=65534", "--gid=65534", "--", bin)
	if out, err := cmd.Output(); err != nil || string(out) != "65534 0\n" {
		t.Fatalf("setuid program as nobody: %v %q, want \"65534 0\"", err, out)
	}
	// A grandchild (through sh) opens a device: without the inherited
	// filter the open of the character node would fail with ENXIO.
	script := `exec 3<>/dev/neuron0 && echo opened`
	cmd = neuronfs(t, "run", "--instance=trn1.2xlarge", "--", "sh", "-c", "sh -c '"+script+"'")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "opened" {
		t.Fatalf("grandchild: %v %q", err, out)
	}
}

// hostView sees a neuron entry appear in /dev, and not another program's
// device (as a loop device appearing meanwhile made the run tests fail).
func TestHostViewIgnoresOtherDevices(t *testing.T) {
	testutil.RequireFUSE(t) // root, to write into /dev
	before := hostView(t)
	other := fmt.Sprintf("/dev/nfs-hostview-test-%d", os.Getpid())
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(other)
	if now := hostView(t); now != before {
		t.Fatalf("another device changed the view:\nbefore:\n%s\nnow:\n%s", before, now)
	}
	ours := fmt.Sprintf("/dev/neuron-hostview-test-%d", os.Getpid())
	if err := os.WriteFile(ours, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(ours)
	if now := hostView(t); now == before || !strings.Contains(now, ours) {
		t.Fatalf("a neuron entry in /dev left the view unchanged:\n%s", now)
	}
}
