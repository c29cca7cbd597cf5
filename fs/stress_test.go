package fs_test

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// "stress" runs random valid and invalid driver calls on random
	// devices until its time is up (or it is killed).
	helpers["stress"] = func() int {
		root := os.Getenv("NEURONFS_ROOT")
		seed, _ := strconv.ParseInt(os.Getenv("NEURONFS_SEED"), 10, 64)
		rng := rand.New(rand.NewSource(seed))
		h := runtime.Host{Root: root}
		idx, _ := h.DeviceIndices()
		deadline := time.Now().Add(2 * time.Second)
		var open []*runtime.Device
		var mems []*runtime.Mem
		buf := make([]byte, 64<<10)
		for time.Now().Before(deadline) {
			switch op := rng.Intn(10); {
			case op == 0 || len(open) == 0:
				if d, err := h.Open(idx[rng.Intn(len(idx))]); err == nil {
					open = append(open, d)
				}
			case op == 1:
				d := open[rng.Intn(len(open))]
				if m, err := d.Alloc(uint64(rng.Intn(4<<20)+1), runtime.AllocOptions{Host: rng.Intn(2) == 0, Channel: uint32(rng.Intn(2))}); err == nil {
					mems = append(mems, m)
				}
			case op == 2 && len(mems) > 0:
				m := mems[rng.Intn(len(mems))]
				m.Write(0, buf[:min(uint64(len(buf)), m.Size)])
				m.Read(0, buf[:min(uint64(len(buf)), m.Size)])
			case op == 3 && len(mems) > 0:
				i := rng.Intn(len(mems))
				mems[i].Free()
				mems = append(mems[:i], mems[i+1:]...)
			case op == 4:
				d := open[rng.Intn(len(open))]
				ds, err := d.AcquireDatastore(0)
				if err == nil && rng.Intn(2) == 0 {
					if m, err := d.MapDatastore(ds); err == nil {
						m[300] = 1
						unix.Munmap(m)
					}
				}
			case op == 5:
				if mi, err := h.OpenMisc(idx[rng.Intn(len(idx))]); err == nil {
					mi.MarkCores(uint32(rng.Intn(3)+1), 0, 7)
					if rng.Intn(2) == 0 {
						mi.Close()
					}
				}
			case op == 6:
				d := open[rng.Intn(len(open))]
				u := ioctl.CRWL{NCID: uint32(rng.Intn(2))}
				testutil.Ioctl(d.Fd(), ioctl.CmdCRWLWriterEnter, &u)
			case op == 7:
				// Garbage: random command values and arguments.
				d := open[rng.Intn(len(open))]
				cmd := ioctl.IOC(uint32(rng.Intn(4)), ioctl.Magic, uint32(rng.Intn(140)), uint32(rng.Intn(300)))
				junk := make([]byte, 512)
				rng.Read(junk)
				testutil.IoctlAddr(d.Fd(), cmd, uintptr(unsafe.Pointer(&junk[0])))
				goruntime.KeepAlive(junk)
			case op == 8 && len(open) > 1:
				i := rng.Intn(len(open))
				open[i].Close()
				open = append(open[:i], open[i+1:]...)
			case op == 9:
				d := open[rng.Intn(len(open))]
				d.Reset(uint32(1 << rng.Intn(2)))
			}
		}
		return 0
	}
}

// Random valid and invalid sequences from many processes, some killed
// midway; afterwards every device is back at its baseline.
func TestStress(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn1.32xlarge")
	procs := 24
	if testing.Short() {
		procs = 8
	}
	goroutinesBefore := goruntime.NumGoroutine()
	var cmds []*exec.Cmd
	for i := 0; i < procs; i++ {
		cmd := helperCmd(t, "stress", "NEURONFS_ROOT="+dir, fmt.Sprintf("NEURONFS_SEED=%d", i))
		cmd.Stderr = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	time.Sleep(700 * time.Millisecond)
	for i, cmd := range cmds {
		if i%3 == 0 {
			cmd.Process.Kill()
		}
	}
	for _, cmd := range cmds {
		cmd.Wait()
	}
	for _, d := range sys.Devices {
		if pids := d.AttachedPIDs(); len(pids) != 0 {
			t.Errorf("neuron%d: still attached %v", d.Index, pids)
		}
		if d.OpenCount() != 0 {
			t.Errorf("neuron%d: open count %d", d.Index, d.OpenCount())
		}
		for _, p := range []string{"neuron_core0/stats/memory_usage/device_mem/total", "neuron_core0/stats/memory_usage/host_mem/total", "neuron_core1/stats/memory_usage/device_mem/total"} {
			b, _ := os.ReadFile(fmt.Sprintf("%s/sys/devices/virtual/neuron_device/neuron%d/%s", dir, d.Index, p))
			if string(b) != "0\n" {
				t.Errorf("neuron%d %s = %q after everyone left", d.Index, p, b)
			}
		}
	}
	if n := sys.MarkedCores(); n != 0 {
		t.Errorf("%d cores still marked", n)
	}
	// A fresh process gets every datastore slot and a full attach table.
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AcquireDatastore(0); err != nil {
		t.Errorf("datastore after the storm: %v", err)
	}
	d.Close()
	time.Sleep(100 * time.Millisecond)
	if after := goruntime.NumGoroutine(); after > goroutinesBefore+8 {
		t.Errorf("goroutines %d -> %d", goroutinesBefore, after)
	}
}
