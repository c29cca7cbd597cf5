package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// ls reports exactly the profile, and the processes holding a device.
func TestLsMatchesProfile(t *testing.T) {
	for _, name := range []string{"trn1.32xlarge", "inf2.48xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(name, func(t *testing.T) {
			dir, sys := testutil.Mount(t, name)
			// A process holding neuron1 open must be listed there.
			holder := exec.Command("sh", "-c", "exec 3<>"+filepath.Join(dir, "dev/neuron1")+"; echo ready; read x")
			in, _ := holder.StdinPipe()
			out, _ := holder.StdoutPipe()
			if err := holder.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { in.Close(); holder.Wait() }()
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				t.Fatalf("holder: %q", line)
			}

			devs, err := listDevices(runtime.Host{Root: dir})
			if err != nil {
				t.Fatal(err)
			}
			inst := sys.Instance
			facts, _ := dhal.Facts(inst.Product.Arch)
			if len(devs) != inst.Devices {
				t.Fatalf("%d devices, want %d", len(devs), inst.Devices)
			}
			for i, d := range devs {
				b := inst.BDFs[i]
				want := fmt.Sprintf("%02x:%02x.%x", b.Bus, b.Slot, b.Func)
				if d.Device != i || d.BDF != want || d.Cores != facts.CoresPerDevice ||
					d.MemorySize != uint64(facts.HBMChannels)*facts.HBMSize || len(d.CoreIDs) != d.Cores ||
					d.CoreIDs[0] != i*facts.CoresPerDevice || fmt.Sprint(d.ConnectedTo) != fmt.Sprint(inst.Neighbours(i)) {
					t.Errorf("device %d: %+v", i, d)
				}
				wantProcs := 0
				if i == 1 {
					wantProcs = 1
				}
				if len(d.Processes) != wantProcs {
					t.Errorf("device %d: processes %+v, want %d", i, d.Processes, wantProcs)
				}
			}
			if p := devs[1].Processes; len(p) == 1 && (p[0].PID != int32(holder.Process.Pid) || p[0].Command != "sh") {
				t.Errorf("process on neuron1 = %+v, want pid %d sh", p[0], holder.Process.Pid)
			}
		})
	}
}

func TestLsWithoutDevices(t *testing.T) {
	if _, err := listDevices(runtime.Host{Root: t.TempDir()}); err == nil {
		t.Fatal("no error for a root without devices")
	}
}
