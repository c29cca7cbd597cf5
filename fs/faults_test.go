package fs_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func setFaults(t *testing.T, dir, spec string) {
	t.Helper()
	if err := os.WriteFile(dir+"/neuronfs/faults", []byte(spec), 0); err != nil {
		t.Fatalf("faults %q: %v", spec, err)
	}
}

// Each injected fault surfaces where the driver's real failure would.
func TestFaultInjection(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()

	setFaults(t, dir, "alloc-fail")
	if _, err := dev.Alloc(4096, runtime.AllocOptions{}); !isErrno(err, unix.ENOMEM) {
		t.Errorf("allocation under alloc-fail: %v", err)
	}
	setFaults(t, dir, "-alloc-fail,fwio-fail")
	if _, err := dev.Alloc(4096, runtime.AllocOptions{}); err != nil {
		t.Errorf("allocation after the fault cleared: %v", err)
	}
	var hw ioctl.ReadHWCounters
	r, e := testutil.Ioctl(dev.Fd(), ioctl.CmdReadHWCounters, &hw)
	expectErrno(t, "READ_HW_COUNTERS under fwio-fail", r, e, 0, unix.EPERM)
	if b, _ := os.ReadFile(dir + "/neuronfs/faults"); string(b) != "fwio-fail\n" {
		t.Errorf("faults file reads %q", b)
	}

	setFaults(t, dir, "none,ecc-hbm=3,ecc-sram=2")
	hwDir := "stats/hardware/"
	if testutil.DeviceCounter(t, dir, 0, hwDir+"mem_ecc_uncorrected") != 3 || testutil.DeviceCounter(t, dir, 0, hwDir+"sram_ecc_uncorrected") != 2 || testutil.DeviceCounter(t, dir, 0, hwDir+"mem_ecc_repairable_uncorrected") != 0 {
		t.Error("ECC counters did not rise")
	}
	setFaults(t, dir, "hbm-repair=pending")
	if testutil.DeviceCounter(t, dir, 0, hwDir+"mem_ecc_repairable_uncorrected") != 3 || testutil.DeviceCounter(t, dir, 0, hwDir+"mem_ecc_uncorrected") != 0 {
		t.Error("a pending repair does not make the errors repairable")
	}

	// A stalled engine holds the copy until the stall clears.
	marker, err := dev.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	q, err := dev.InitQueue(4, 1, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	setFaults(t, dir, "dma-stall")
	if err := q.Submit([]runtime.Copy{marker.Copy()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if marker.Done() {
		t.Error("a stalled engine completed a copy")
	}
	setFaults(t, dir, "-dma-stall")
	waitMarker(t, marker)

	// An aborting engine stops the queue with a read error.
	setFaults(t, dir, "dma-abort")
	if err := q.Submit([]runtime.Copy{marker.Copy()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		tx, _, _ := q.State()
		if tx.SWStatus == uint32(dma.QueueAborted) && tx.HWStatus&dma.StatusReadError != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue under dma-abort: %+v", tx)
		}
		time.Sleep(time.Millisecond)
	}

	// A reset the firmware never finishes fails, and is counted.
	setFaults(t, dir, "none,reset-fail")
	if err := dev.Reset(1 << 2); err == nil {
		t.Error("a reset succeeded under reset-fail")
	}
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core2/stats/other_info/reset_fail_count/total"); got != 1 {
		t.Errorf("reset_fail_count %d", got)
	}
	setFaults(t, dir, "none")
	if err := dev.Reset(1 << 2); err != nil {
		t.Errorf("reset after the fault cleared: %v", err)
	}
	// none cleared the ECC readings set above too.
	if b, _ := os.ReadFile(dir + "/neuronfs/faults"); string(b) != "none\n" {
		t.Errorf("faults file reads %q after none", b)
	}
	// A refused write gets EINVAL, and the file says why.
	if err := os.WriteFile(dir+"/neuronfs/faults", []byte("no-such-fault"), 0); !isErrno(err, unix.EINVAL) {
		t.Errorf("an unknown fault: %v, want EINVAL", err)
	}
	if b, _ := os.ReadFile(dir + "/neuronfs/faults"); !strings.HasPrefix(string(b), "none\n# last write rejected: unknown fault \"no-such-fault\"") {
		t.Errorf("faults file reads %q after a refused write", b)
	}
}
