package fs_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/debug"
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
		secs, _ := strconv.ParseFloat(os.Getenv("NEURONFS_STRESS_SECONDS"), 64)
		deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
		var open []*runtime.Device
		var mems []*runtime.Mem
		buf := make([]byte, 64<<10)
		for time.Now().Before(deadline) {
			switch op := rng.Intn(13); {
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
			case op == 10:
				stressDMA(rng, open[rng.Intn(len(open))])
			case op == 11:
				d := open[rng.Intn(len(open))]
				nq := ioctl.NotificationsInitV2{NQDevID: uint32(rng.Intn(2)), NQType: uint32(rng.Intn(6)), EngineIndex: uint32(rng.Intn(16)), Size: 1 << (12 + rng.Intn(4)), OnHostMemory: uint32(rng.Intn(2))}
				testutil.Ioctl(d.Fd(), ioctl.CmdNotificationsInitV2, &nq)
			case op == 12:
				// Register traffic: reads anywhere, writes to plain registers.
				d := open[rng.Intn(len(open))]
				var info ioctl.DeviceInfo
				testutil.Ioctl(d.Fd(), ioctl.CmdDeviceInfo, &info)
				addrs := []uint64{info.BARAddress[0] + uint64(rng.Intn(1<<20))&^3}
				data := []uint32{rng.Uint32()}
				v := ioctl.BARRW{Count: 1, Address: uint64(uintptr(unsafe.Pointer(&addrs[0]))), Data: uint64(uintptr(unsafe.Pointer(&data[0])))}
				testutil.Ioctl(d.Fd(), ioctl.CmdBARRead, &v)
				goruntime.KeepAlive(addrs)
				goruntime.KeepAlive(data)
			}
		}
		return 0
	}
}

// stressDMA copies between two fresh chunks on a queue of the process's
// own, sometimes leaving the queue and chunks to its exit.
func stressDMA(rng *rand.Rand, d *runtime.Device) {
	src, err := d.Alloc(256<<10, runtime.AllocOptions{Host: rng.Intn(2) == 0})
	if err != nil {
		return
	}
	dst, err := d.Alloc(256<<10, runtime.AllocOptions{Host: rng.Intn(2) == 0})
	if err != nil {
		src.Free()
		return
	}
	marker, err := d.NewMarker()
	if err != nil {
		return
	}
	eng := uint32(rng.Intn(32))
	q, err := d.InitQueue(eng, uint32(rng.Intn(16)), 64, runtime.AllocOptions{Host: true})
	if err == nil && q.Submit([]runtime.Copy{{Src: src.PA, Dst: dst.PA, Len: 0}, {Src: src.PA + 1<<16, Dst: dst.PA + 1<<16, Len: 4096}, marker.Copy()}) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		marker.Wait(ctx) // a reset may stop the queue: then the wait times out
		cancel()
	}
	if rng.Intn(2) == 0 {
		marker.Close()
		src.Free()
		dst.Free()
	}
}

// stressConfig reads the stress size: NEURONFS_STRESS_PROCS processes for
// NEURONFS_STRESS_SECONDS each (scripts/stress.sh sets both for the long
// run); the default is the CI run.
func stressConfig() (procs int, secs string) {
	procs, secs = 32, "2"
	if testing.Short() {
		procs = 8
	}
	if p, err := strconv.Atoi(os.Getenv("NEURONFS_STRESS_PROCS")); err == nil && p > 0 {
		procs = p
	}
	if s := os.Getenv("NEURONFS_STRESS_SECONDS"); s != "" {
		secs = s
	}
	return procs, secs
}

// Random valid and invalid sequences from many processes across 16
// devices, some killed midway; afterwards every device is back at its
// baseline and the daemon's memory and goroutines are back near theirs.
func TestStress(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn1.32xlarge")
	procs, secs := stressConfig()
	debug.FreeOSMemory()
	rssBefore := rssKiB(t)
	goroutinesBefore := goruntime.NumGoroutine()
	var cmds []*exec.Cmd
	for i := 0; i < procs; i++ {
		cmd := helperCmd(t, "stress", "NEURONFS_ROOT="+dir, fmt.Sprintf("NEURONFS_SEED=%d", i), "NEURONFS_STRESS_SECONDS="+secs)
		cmd.Stderr = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// Kill a third of them at random moments of their run.
	killRng := rand.New(rand.NewSource(int64(procs)))
	total, _ := strconv.ParseFloat(secs, 64)
	for i, cmd := range cmds {
		if i%3 == 0 {
			at := time.Duration(killRng.Float64() * total * float64(time.Second))
			time.AfterFunc(at, func() { cmd.Process.Kill() })
		}
	}
	for _, cmd := range cmds {
		cmd.Wait()
	}
	// Notification rings live as long as the device (until their core is
	// reset), as on the driver: reset every core before the baseline.
	for _, d := range sys.Devices {
		if pids := d.AttachedPIDs(); len(pids) != 0 {
			continue // reported below
		}
		rd, err := runtime.Host{Root: dir}.Open(d.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := rd.Reset(1<<sys.Arch.CoresPerDevice - 1); err != nil {
			t.Errorf("neuron%d: reset after the storm: %v", d.Index, err)
		}
		rd.Close()
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
	for _, d := range sys.Devices {
		if n := d.OwnedQueues(); n != 0 {
			t.Errorf("neuron%d: %d DMA queues still owned by a process", d.Index, n)
		}
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
	debug.FreeOSMemory()
	if grown := rssKiB(t) - rssBefore; grown > 64<<10 {
		t.Errorf("daemon RSS grew by %d KiB over the storm", grown)
	} else {
		t.Logf("daemon RSS %d KiB -> %+d KiB", rssBefore, grown)
	}
}
