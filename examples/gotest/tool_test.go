// Package gotest is a module of its own that tests a program against an
// emulated Neuron host with github.com/neuronfs/neuronfs/testbed, as a
// project outside neuronfs would.
package gotest

import (
	"context"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/testbed"
)

// The program under test, here a shell line: it counts the devices and
// reads the first one's name, as a device-listing tool does.
const tool = `ls /dev | grep -c '^neuron[0-9]'; cat /sys/class/neuron_device/neuron0/info/architecture/device_name`

func TestToolSeesTheHost(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("trn2.48xlarge"), testbed.Devices(4))
	out, err := tb.Command("sh", "-c", tool).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "4\nTrainium2\n"; got != want {
		t.Errorf("tool output %q, want %q", got, want)
	}
}

// A reset failure injected through the control interface: the program's
// reset fails (the device goes invalid, its next open is refused) and the
// state says so.
func TestToolSeesResetFailure(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("trn2.3xlarge"))
	if err := tb.InjectFaults("reset-fail"); err != nil {
		t.Fatal(err)
	}
	if out, err := tb.Command("sh", "-c", `echo 1 > /sys/class/neuron_device/neuron0/reset`).CombinedOutput(); err != nil {
		t.Fatalf("reset: %v\n%s", err, out)
	}
	st, err := tb.WaitFor(context.Background(), func(s testbed.State) bool { return s.Devices[0].Resets.Last == "failed" })
	if err != nil {
		t.Fatal(err)
	}
	if st.Devices[0].State != "invalid" {
		t.Errorf("device 0 is %q after a failed reset, want invalid", st.Devices[0].State)
	}
	out, err := tb.Command("sh", "-c", `exec 3<>/dev/neuron0`).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Invalid argument") {
		t.Errorf("open after the failed reset: %v %q, want EINVAL", err, out)
	}
	if err := tb.ClearFaults(); err != nil {
		t.Fatal(err)
	}
	st, err = tb.State()
	if err != nil || len(st.Faults) != 0 || st.Version != 1 {
		t.Errorf("state after ClearFaults: version %d faults %v (%v)", st.Version, st.Faults, err)
	}
}
