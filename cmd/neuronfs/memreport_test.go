package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/procfs"
	"github.com/neuronfs/neuronfs/runtime"
)

// ls and top show what the emulator's backing holds of a device, from the
// mount's neuronfs/memory; a chunk written makes it grow.
func TestLsTopShowHeldMemory(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.3xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := d.Alloc(64<<20, runtime.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fill(0, 64<<20, 7); err != nil {
		t.Fatal(err)
	}
	devs, err := listDevices(runtime.Host{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sys.Devices[0].Chip().PhysicalResident()
	if devs[0].MemoryHeld == nil || *devs[0].MemoryHeld < 64<<20 || *devs[0].MemoryHeld > want {
		t.Errorf("ls: held %v, want 64 MiB..%d", devs[0].MemoryHeld, want)
	}
	var b strings.Builder
	printDeviceTable(&b, devs)
	if lines := strings.Split(b.String(), "\n"); !strings.Contains(lines[0], "HELD") || !strings.Contains(lines[1], "MiB") {
		t.Errorf("ls table:\n%s", b.String())
	}
	cmd := exec.Command(os.Args[0], "top", "--root", dir, "--once", "--interval", "10ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top --once: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "emulator holds 64") || !strings.Contains(string(out), "of 96.0 GiB") {
		t.Errorf("top shows no held memory:\n%s", out)
	}
}

// A daemon lowers its OOM score where it may (CAP_SYS_RESOURCE); under
// run, CMD keeps the score it would have had either way.
func TestDaemonOOMScore(t *testing.T) {
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := startMount(t, "--instance=trn2.3xlarge")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if hasCapSysResource(t) {
		waitFor(t, "the daemon's OOM score", func() bool {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", cmd.Process.Pid))
			return strings.TrimSpace(string(b)) == daemonOOMScoreAdj
		})
	} else {
		t.Log("no CAP_SYS_RESOURCE here: the daemon cannot lower its OOM score; checking only that CMD keeps its own")
	}
	out, err := neuronfs(t, "run", "--instance=trn2.3xlarge", "--", "cat", "/proc/self/oom_score_adj").Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if strings.TrimSpace(string(out)) != strings.TrimSpace(string(own)) {
		t.Errorf("CMD under run has OOM score %q, want %q", out, own)
	}
}

// hasCapSysResource reads the effective capability set of this process.
func hasCapSysResource(t *testing.T) bool {
	v, err := procfs.Field("/proc/self/status", "CapEff")
	if err != nil {
		t.Fatal(err)
	}
	caps, err := strconv.ParseUint(v, 16, 64)
	return err == nil && caps&(1<<unix.CAP_SYS_RESOURCE) != 0
}
