package testbed_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/testbed"
)

// A complete test of a tool that lists the Neuron devices of its host:
// the tool (ls here, your program in your tests) runs inside an emulated
// trn2.48xlarge and must find its 16 devices.
func TestMyToolListsDevices(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("trn2.48xlarge"))
	out, err := tb.Command("sh", "-c", "ls /dev | grep '^neuron[0-9]'").Output()
	if err != nil {
		t.Fatal(err)
	}
	devices := strings.Fields(string(out))
	if len(devices) != 16 {
		t.Errorf("the tool lists %d devices, want 16: %q", len(devices), devices)
	}
}

// exampleT stands for the *testing.T a test is given; examples have none.
var exampleT testing.TB

// Start a host, run a program in it, and read its output.
func ExampleNew() {
	tb := testbed.New(exampleT, testbed.Instance("inf2.xlarge"), testbed.DriverVersion("2.29.0.0"))
	out, err := tb.Command("cat", "/sys/module/neuron/version").Output()
	if err != nil {
		exampleT.Fatal(err)
	}
	fmt.Print(string(out)) // 2.29.0.0
}

// Break the device under a running program and watch the driver's state.
func ExampleTestbed_InjectFaults() {
	tb := testbed.New(exampleT, testbed.Instance("trn2.3xlarge"))
	if err := tb.InjectFaults("reset-fail"); err != nil {
		exampleT.Fatal(err)
	}
	// The program under test resets device 0 and should report the failure.
	cmd := tb.Command("my-runtime-app", "--reset", "0")
	cmd.Stderr = os.Stderr
	_ = cmd.Run()
	st, err := tb.WaitFor(context.Background(), func(s testbed.State) bool {
		return s.Devices[0].Resets.Last == "failed"
	})
	if err != nil {
		exampleT.Fatal(err)
	}
	fmt.Println(st.Devices[0].State) // invalid
}

// Files of the host, from the test process itself.
func ExampleTestbed_Root() {
	tb := testbed.New(exampleT, testbed.Devices(2))
	b, _ := os.ReadFile(tb.Root() + "/sys/class/neuron_device/neuron1/info/architecture/device_name")
	fmt.Print(string(b)) // Trainium2
}
