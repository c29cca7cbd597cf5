package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/hostview"
)

func init() {
	clients["control"] = controlClient
}

// controlState reads the state file of the control directory.
func controlState(dir string) (device.HostState, error) {
	var st device.HostState
	b, err := os.ReadFile(filepath.Join(dir, device.StateFile))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	return st, err
}

// controlClient, inside run, finds the control directory through the
// environment, injects a reset failure, resets device 0 through sysfs
// and sees the failure both in the state file and in the driver's answer
// (an open of an invalid device is EINVAL); then clears it.
func controlClient() int {
	dir := os.Getenv(hostview.ControlEnv)
	if dir == "" {
		return clientFail("no $%s", hostview.ControlEnv)
	}
	if v, err := os.ReadFile(filepath.Join(dir, device.VersionFile)); err != nil || string(v) != "1\n" {
		return clientFail("version = %q, %v", v, err)
	}
	fd, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return clientFail("open: %v", err)
	}
	st, err := controlState(dir)
	if err != nil || len(st.Devices) != 1 || len(st.Devices[0].PIDs) != 1 || st.Devices[0].PIDs[0] != int32(os.Getpid()) {
		return clientFail("state with /dev/neuron0 open: %+v, %v", st, err)
	}
	unix.Close(fd)
	if err := os.WriteFile(filepath.Join(dir, device.FaultsFile), []byte("reset-fail\n"), 0); err != nil {
		return clientFail("inject: %v", err)
	}
	reset := "/sys/devices/virtual/neuron_device/neuron0/reset"
	if err := os.WriteFile(reset, []byte("1\n"), 0); err != nil {
		return clientFail("reset: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err = controlState(dir)
		if err != nil {
			return clientFail("state: %v", err)
		}
		if st.Devices[0].State == "invalid" {
			break
		}
		if time.Now().After(deadline) {
			return clientFail("device 0 never became invalid: %+v", st.Devices[0])
		}
		time.Sleep(time.Millisecond)
	}
	if d := st.Devices[0]; d.Resets.Last != "failed" || d.Cores[0].Counters["reset_fail_count"] == 0 || strings.Join(st.Faults, ",") != "reset-fail" {
		return clientFail("after the failed reset: %+v faults %q", d, st.Faults)
	}
	if _, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0); err != unix.EINVAL {
		return clientFail("open of the invalid device: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(dir, device.FaultsFile), []byte("none\n"), 0); err != nil {
		return clientFail("clear: %v", err)
	}
	if st, err := controlState(dir); err != nil || len(st.Faults) != 0 {
		return clientFail("faults after none: %+v, %v", st.Faults, err)
	}
	return 0
}

// A command under run finds the control interface through
// $NEURONFS_CONTROL and drives a fault through it.
func TestRunControlInterface(t *testing.T) {
	cmd := neuronfs(t, "run", "--instance", "inf2.xlarge", "--", os.Args[0], "__client", "control")
	cmd.Stdout = os.Stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// --inject goes through the same parser as the faults file: what it
// switched on is what the state file shows.
func TestRunInjectShowsInState(t *testing.T) {
	cmd := neuronfs(t, "run", "--instance", "inf2.xlarge", "--inject", "fwio-fail,ecc-sram=2", "--", "sh", "-c", `cat "$NEURONFS_CONTROL/state"`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var st device.HostState
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("state %q: %v", out, err)
	}
	if strings.Join(st.Faults, ",") != "fwio-fail,ecc-sram=2" {
		t.Errorf("faults = %q, want fwio-fail,ecc-sram=2", st.Faults)
	}
}
