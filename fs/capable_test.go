package fs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/procfs"
)

// The driver's capable() asks about the initial user namespace: root of
// a namespace of its own (`unshare -U -r`) holds every capability there
// and none the driver checks, so it may neither map device memory no
// chunk covers nor read past the first 64 bytes of PCI config space.
func TestCapabilityInInitialUserNamespace(t *testing.T) {
	d := testutil.StartDaemon(t, device.Config{Instance: "trn1.2xlarge"})
	// A page of HBM that no chunk covers.
	facts := d.Sys.Arch
	raw := facts.HBMBases[0] + facts.HBMSize - 1<<20
	config := pciConfigPath(t, d.Dir)
	// nobody reaches the mount through the test's private directory.
	if err := os.Chmod(filepath.Dir(d.Dir), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name    string
		attr    *syscall.SysProcAttr
		capable bool
	}{
		{"root", nil, true},
		{"userns-root", &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		}, false},
		{"nobody", &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tid := startSleeper(t, c.attr)
			if c.name == "userns-root" && capEff(t, tid)&(1<<unix.CAP_SYS_RAWIO) == 0 {
				t.Fatalf("root of its own user namespace lacks CAP_SYS_RAWIO in its own CapEff: the case tests nothing")
			}
			want := syscall.Errno(0)
			if !c.capable {
				want = syscall.EPERM
			}
			if got := d.FS.CheckMmap(0, tid, raw, 1<<20, unix.PROT_READ|unix.PROT_WRITE); got != want {
				t.Errorf("mmap of uncovered HBM [%#x, +1 MiB): %v, want %v", raw, got, want)
			}
			wantLen := 64
			if c.capable {
				wantLen = 4096
			}
			if n := readAs(t, c.attr, config); n != wantLen {
				t.Errorf("read %d bytes of %s, want %d", n, config, wantLen)
			}
		})
	}
}

// startSleeper starts a process with attr (nil: as this one) that waits
// until the test ends, and returns its pid.
func startSleeper(t *testing.T, attr *syscall.SysProcAttr) int32 {
	t.Helper()
	cmd := exec.Command("sleep", "3600")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep (%+v): %v", attr, err)
	}
	testutil.GuardProcess(t, cmd.Process.Pid)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The identity is the child's once it has exec'd.
	testutil.WaitFor(t, "sleep to exec", 10*time.Second, func() bool {
		exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
		return err == nil && filepath.Base(exe) == "sleep"
	})
	return int32(cmd.Process.Pid)
}

// capEff reads the effective capability set of task tid.
func capEff(t *testing.T, tid int32) uint64 {
	t.Helper()
	v, err := procfs.Field("/proc/"+strconv.Itoa(int(tid))+"/status", "CapEff")
	if err != nil {
		t.Fatal(err)
	}
	caps, err := strconv.ParseUint(v, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return caps
}

// readAs reads file with cat run with attr and returns how many bytes
// it got.
func readAs(t *testing.T, attr *syscall.SysProcAttr, file string) int {
	t.Helper()
	cmd := exec.Command("cat", file)
	cmd.SysProcAttr = attr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat %s (%+v): %v", file, attr, err)
	}
	return len(out)
}

// pciConfigPath finds device 0's PCI config space file in the mount.
func pciConfigPath(t *testing.T, root string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*/config"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no PCI config file under %s: %v", root, err)
	}
	return matches[0]
}
