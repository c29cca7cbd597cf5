package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// Environment of the container test's helper.
const containerArgsEnv = "NEURONFS_CONTAINER_ARGS" // tab-separated command ascontainer runs

func init() {
	// ascontainer makes this process's view what an unprivileged
	// container gives (it starts in a private mount namespace): no
	// /dev/fuse (/dev/null bound over it), user namespaces refused as by
	// Docker's default seccomp profile, uid and gid nobody; then it execs
	// $NEURONFS_CONTAINER_ARGS.
	clients["ascontainer"] = func() int {
		goruntime.LockOSThread() // the thread that sets no_new_privs execs
		if _, err := os.Stat(fuseDevice); err == nil {
			if err := unix.Mount("/dev/null", fuseDevice, "", unix.MS_BIND, ""); err != nil {
				return clientFail("hide %s: %v", fuseDevice, err)
			}
		}
		if err := syscall.Setgroups(nil); err != nil {
			return clientFail("%v", err)
		}
		if err := syscall.Setresgid(nobody, nobody, nobody); err != nil {
			return clientFail("%v", err)
		}
		if err := syscall.Setresuid(nobody, nobody, nobody); err != nil {
			return clientFail("%v", err)
		}
		if err := testenv.RefuseUserns(); err != nil {
			return clientFail("%v", err)
		}
		args := strings.Split(os.Getenv(containerArgsEnv), "\t")
		return clientFail("exec: %v", syscall.Exec(args[0], args, os.Environ()))
	}
	// container checks, under run's filter host view, what a program
	// finds of the host by path, then the devices (directfds).
	clients["container"] = func() int {
		if err := checkContainerPaths(); err != nil {
			return clientFail("%v", err)
		}
		return clients["directfds"]()
	}
}

// checkContainerPaths checks the paths a program finds devices by: the
// node, /proc/devices, the class directory, an attribute, the control
// directory, and an ordinary file beside them.
func checkContainerPaths() error {
	procDevices, err := os.ReadFile("/proc/devices")
	if err != nil {
		return err
	}
	var major uint32
	for _, line := range strings.Split(string(procDevices), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "neuron" {
			fmt.Sscan(f[0], &major)
		}
	}
	if major == 0 {
		return fmt.Errorf("/proc/devices names no neuron:\n%s", procDevices)
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/neuron0", &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != major || unix.Minor(st.Rdev) != 0 {
		return fmt.Errorf("stat /dev/neuron0: %v, mode %#o, rdev %d:%d, want a character device %d:0", err, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), major)
	}
	if err := unix.Access("/dev/neuron0", unix.R_OK|unix.W_OK); err != nil {
		return fmt.Errorf("access /dev/neuron0: %v", err)
	}
	entries, err := os.ReadDir("/sys/class/neuron_device")
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "neuron0" }) {
		return fmt.Errorf("/sys/class/neuron_device lists no neuron0: %v", entries)
	}
	if target, err := os.Readlink("/sys/class/neuron_device/neuron0"); err != nil || target != "../../devices/virtual/neuron_device/neuron0" {
		return fmt.Errorf("readlink /sys/class/neuron_device/neuron0: %q %v", target, err)
	}
	// With a trailing slash, lstat follows the link as the kernel does.
	var dir unix.Stat_t
	if err := unix.Lstat("/sys/class/neuron_device/neuron0/", &dir); err != nil || dir.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("lstat neuron0/: %v, mode %#o, want a directory", err, dir.Mode)
	}
	dev, err := os.ReadFile("/sys/class/neuron_device/neuron0/dev")
	if want := fmt.Sprintf("%d:0\n", major); err != nil || string(dev) != want {
		return fmt.Errorf("neuron0/dev reads %q (%v), want %q", dev, err, want)
	}
	if err := checkContainerFaults(os.Getenv("NEURONFS_CONTROL") + "/faults"); err != nil {
		return err
	}
	self, err := os.ReadFile("/proc/self/status")
	if err != nil || !bytes.Contains(self, []byte("NoNewPrivs:\t1")) {
		return fmt.Errorf("an ordinary open: %v, or no no_new_privs", err)
	}
	return nil
}

// checkContainerFaults writes the control directory's faults file (the
// run's user's): a bad list fails with the store's EINVAL and shows
// why, a good one is taken.
func checkContainerFaults(path string) error {
	if err := os.WriteFile(path, []byte("no-such-fault\n"), 0); !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("a bad fault list written: %v, want EINVAL", err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "rejected") {
		return fmt.Errorf("faults after a bad list: %q %v", b, err)
	}
	if err := os.WriteFile(path, []byte("none\n"), 0); err != nil {
		return fmt.Errorf("faults: none: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "none\n" {
		return fmt.Errorf("faults after none: %q %v", b, err)
	}
	return nil
}

// A run inside what an unprivileged container gives (no /dev/fuse, no
// user namespace, uid nobody) makes the host with the supervisor alone:
// auto picks the filter view, and a program finds and uses the devices
// by their paths.
func TestRunContainer(t *testing.T) {
	bin := binaryCopy(t, "neuronfs")
	args := []string{bin, "run", "--", bin, "__client", "container"}
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command(bin, "__client", "ascontainer")
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	} else {
		// Already unprivileged (vmtest's container phase): the
		// conditions are the host's own; the view is named, so a host
		// with FUSE and user namespaces tests it too.
		args = slices.Insert(args, 2, "--host-view=filter")
		cmd = exec.Command(args[0], args[1:]...)
	}
	var env []string
	for _, kv := range os.Environ() {
		// nobody's daemon takes memfds (the suite's backing directory
		// is root's), and auto decides alone.
		if !strings.HasPrefix(kv, device.BackingEnv+"=") && !strings.HasPrefix(kv, hostViewEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "NEURONFS_AS_MAIN=1", containerArgsEnv+"="+strings.Join(args, "\t"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "ok memory-file ") {
		t.Fatalf("%v: %q, want \"ok memory-file ...\"", err, out)
	}
}

// With /dev/fuse usable but user namespaces refused by seccomp (Docker's
// default profile with the device passed), no sysctl tells: auto tries
// the mount, and on the refusal serves the filter view instead.
func TestRunContainerWithFUSE(t *testing.T) {
	bin := binaryCopy(t, "neuronfs")
	cmd := asNobody(t, bin, "run", "--", bin, "__client", "container")
	cmd.Env = append(cmd.Env, noUsernsEnv+"=1")
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "ok memory-file ") {
		t.Fatalf("%v: %q, want \"ok memory-file ...\"", err, out)
	}
}
