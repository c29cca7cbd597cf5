package testbed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/testbed"
)

// checkEnv makes the test binary, run as a command inside a testbed,
// check the host it sees against the instance named.
const checkEnv = "NEURONFS_TESTBED_CHECK"

// ioctlEnv makes the test binary, run as a command inside a testbed,
// open /dev/neuron0 and issue one ioctl.
const ioctlEnv = "NEURONFS_TESTBED_IOCTL"

func TestMain(m *testing.M) {
	if os.Getenv(ioctlEnv) == "1" {
		os.Exit(firstIoctl())
	}
	if n, err := strconv.Atoi(os.Getenv(allocsEnv)); err == nil {
		os.Exit(allocs(n))
	}
	if name := os.Getenv(checkEnv); name != "" {
		inst, err := dhal.LookupInstance(name)
		if err == nil {
			err = testutil.CheckHost("/", inst)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A command sees the host at the real paths, as under `neuronfs run`:
// every discovery ioctl, the sysfs tree and the metrics as the driver
// shows them right after start.
func TestCommandChecksEveryDevice(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("trn2.3xlarge"))
	cmd := tb.Command(os.Args[0])
	cmd.Env = append(os.Environ(), checkEnv+"=trn2.3xlarge")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("check inside the testbed: %v\n%s", err, out)
	}
}

// The character devices, /proc/devices, DMI and the control directory
// are where a shell finds them; the testbed's own tree is there too.
func TestCommandSeesCharacterDevices(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
	out, err := tb.Command("sh", "-c", `stat -c %F /dev/neuron0; grep -c ' neuron$' /proc/devices; cat /sys/class/dmi/id/product_name "$NEURONFS_CONTROL/version"`).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := string(out), "character special file\n1\ninf2.xlarge\n1\n"; got != want {
		t.Errorf("inside the testbed: %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(tb.Root(), "dev", "neuron0")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(tb.Root(), "dev", "neuron1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("inf2.xlarge has one device; dev/neuron1: %v", err)
	}
}

// A reset failure injected through the control interface shows in the
// state and in the driver's answer to a command.
func TestInjectedResetFailure(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
	if err := tb.InjectFaults("reset-fail"); err != nil {
		t.Fatal(err)
	}
	if out, err := tb.Command("sh", "-c", "echo 1 > /sys/devices/virtual/neuron_device/neuron0/reset").CombinedOutput(); err != nil {
		t.Fatalf("sysfs reset: %v\n%s", err, out)
	}
	st, err := tb.WaitFor(context.Background(), func(s testbed.State) bool { return s.Devices[0].State == "invalid" })
	if err != nil {
		t.Fatalf("%v; device 0: %+v", err, st.Devices[0])
	}
	if d := st.Devices[0]; d.Resets.Last != "failed" || d.Cores[0].Counters["reset_fail_count"] != 1 {
		t.Errorf("after the failed reset: %+v, counters %v", d.Resets, d.Cores[0].Counters)
	}
	// The driver refuses opens of an invalid device with EINVAL.
	out, err := tb.Command("sh", "-c", "exec 3<>/dev/neuron0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Invalid argument") {
		t.Errorf("open of the invalid device: %v, %q; want EINVAL", err, out)
	}
	if err := tb.ClearFaults(); err != nil {
		t.Fatal(err)
	}
	if st, err := tb.State(); err != nil || len(st.Faults) != 0 {
		t.Errorf("faults after ClearFaults: %v, %v", st.Faults, err)
	}
}

// A fault list with a mistake is refused with the reason, at New and
// later.
func TestBadFaultList(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"), testbed.Faults("ecc-sram=4"))
	err := tb.InjectFaults("reset-fail,bogus")
	if err == nil || !strings.Contains(err.Error(), `unknown fault "bogus"`) {
		t.Errorf("bad list: %v", err)
	}
	st, err := tb.State()
	if err != nil || strings.Join(st.Faults, ",") != "ecc-sram=4" {
		t.Errorf("faults = %q (%v), want the ones New set", st.Faults, err)
	}
}

// A command that is not there fails the way a shell's does.
func TestCommandNotFound(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
	err := tb.Command("no-such-command-here").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 {
		t.Errorf("missing command: %v, want exit status 127", err)
	}
}

// firstIoctl opens device 0 and asks DEVICE_BASIC_INFO.
func firstIoctl() int {
	fd, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	var bi ioctl.DeviceBasicInfo
	if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
		fmt.Fprintln(os.Stderr, "DEVICE_BASIC_INFO:", r, e, bi)
		return 1
	}
	return 0
}

// Without FUSE passthrough (as on Linux < 6.9) a command's device
// descriptors are served by the supervisor, and the host checks the same.
func TestCommandWithoutPassthrough(t *testing.T) {
	t.Setenv(fs.NoPassthroughEnv, "1")
	tb := testbed.New(t, testbed.Instance("trn2.3xlarge"))
	cmd := tb.Command(os.Args[0])
	cmd.Env = append(os.Environ(), checkEnv+"=trn2.3xlarge")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("check inside the testbed: %v\n%s", err, out)
	}
}
