package main

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// directstorm runs $NEURONFS_STORM_PROCS directstormchild processes
	// for their run, SIGKILLs a third at random moments, then checks that
	// the device is back where it was: every byte of device memory freed,
	// and a fresh open answers.
	clients["directstorm"] = func() int {
		procs, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_PROCS"))
		seed, _ := strconv.ParseInt(os.Getenv("NEURONFS_SEED"), 10, 64)
		host := runtime.Host{Root: "/"}
		before, err := host.SysfsCounter(0, memTotal)
		if err != nil {
			return clientFail("%v", err)
		}
		rng := rand.New(rand.NewSource(seed))
		var wg sync.WaitGroup
		failed := make(chan string, procs)
		for i := range procs {
			child := exec.Command(os.Args[0], "__client", "directstormchild")
			child.Env = append(os.Environ(), fmt.Sprintf("NEURONFS_SEED=%d", seed+int64(i)))
			var stdout, stderr strings.Builder
			child.Stdout, child.Stderr = &stdout, &stderr
			if err := child.Start(); err != nil {
				return clientFail("%v", err)
			}
			killAt := time.Duration(-1)
			if i%3 == 0 {
				killAt = time.Duration(rng.Int63n(int64(1500 * time.Millisecond)))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if killAt >= 0 {
					time.AfterFunc(killAt, func() { child.Process.Kill() })
				}
				if err := child.Wait(); err != nil && killAt < 0 {
					failed <- fmt.Sprintf("child %d: %v: %s", i, err, stderr.String())
				}
				if killAt < 0 && !strings.Contains(stdout.String(), "ops ") {
					failed <- fmt.Sprintf("child %d did nothing: %q", i, stdout.String())
				}
			}()
		}
		wg.Wait()
		close(failed)
		for f := range failed {
			return clientFail("%s", f)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			now, _ := host.SysfsCounter(0, memTotal)
			if now == before {
				break
			}
			if time.Now().After(deadline) {
				return clientFail("device memory %d after the storm, %d before", now, before)
			}
		}
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			return clientFail("open after the storm: %v", err)
		}
		var bi ioctl.DeviceBasicInfo
		if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 {
			return clientFail("DEVICE_BASIC_INFO after the storm: %d %v", r, e)
		}
		fmt.Println("storm ok")
		return 0
	}
	// directstormchild does random device work for a second: opens,
	// copies of descriptors and their closes, allocations, mappings,
	// buffer copies, and garbage commands and pointers.
	clients["directstormchild"] = func() int {
		seed, _ := strconv.ParseInt(os.Getenv("NEURONFS_SEED"), 10, 64)
		rng := rand.New(rand.NewSource(seed))
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			return clientFail("%v", err)
		}
		var fds []int
		var mems []*runtime.Mem
		buf := make([]byte, 64<<10)
		ops := 0
		for end := time.Now().Add(time.Second); time.Now().Before(end); ops++ {
			switch rng.Intn(13) {
			case 0:
				flags := unix.O_RDWR
				if rng.Intn(4) == 0 {
					flags = unix.O_WRONLY
				}
				if fd, err := unix.Open("/dev/neuron0", flags|unix.O_CLOEXEC, 0); err == nil {
					fds = append(fds, fd)
				}
			case 1:
				if len(fds) > 0 {
					if fd, err := unix.Dup(fds[rng.Intn(len(fds))]); err == nil {
						fds = append(fds, fd)
					}
				}
			case 2:
				if len(fds) > 0 {
					k := rng.Intn(len(fds))
					unix.Close(fds[k])
					fds = append(fds[:k], fds[k+1:]...)
				}
			case 3:
				if m, err := d.Alloc(uint64(1+rng.Intn(16))<<16, runtime.AllocOptions{Channel: uint32(rng.Intn(2))}); err == nil {
					mems = append(mems, m)
				}
			case 4:
				if len(mems) > 0 {
					k := rng.Intn(len(mems))
					mems[k].Free()
					mems = append(mems[:k], mems[k+1:]...)
				}
			case 5:
				if len(mems) > 0 {
					m := mems[rng.Intn(len(mems))]
					n := min(uint64(len(buf)), m.Size)
					m.Write(0, buf[:n])
					m.Read(0, buf[:n])
				}
			case 6:
				if len(mems) > 0 {
					if b, err := mems[rng.Intn(len(mems))].Map(); err == nil {
						b[rng.Intn(len(b))]++
						unix.Munmap(b)
					}
				}
			case 7:
				// A garbage command, or a real one with a garbage pointer.
				cmd := ioctl.IOC(uint32(rng.Intn(4)), ioctl.Magic, uint32(rng.Intn(256)), uint32(rng.Intn(128)))
				testutil.IoctlAddr(d.Fd(), cmd, uintptr(rng.Int63n(1<<47)))
			case 8:
				// A copy onto a number of its own choosing, replacing what
				// was there.
				if len(fds) > 0 {
					unix.Dup2(fds[rng.Intn(len(fds))], 900+rng.Intn(20))
				}
			case 9:
				if rng.Intn(8) == 0 {
					unix.CloseRange(900, 919, 0)
				}
			case 10:
				// Calls a device file has no operation for.
				unix.Read(d.Fd(), buf[:64])
				unix.Seek(d.Fd(), int64(rng.Intn(1<<20)), 0)
			default:
				var bi ioctl.DeviceBasicInfo
				if r, e := testutil.Ioctl(d.Fd(), ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 {
					return clientFail("DEVICE_BASIC_INFO: %d %v", r, e)
				}
			}
		}
		fmt.Println("ops", ops)
		return 0
	}
}

// A storm of clients inside run, a third of them SIGKILLed, leaves the
// device where it was and the run ends, whatever the device descriptors
// are.
func TestRunDeviceFDsStorm(t *testing.T) {
	seed := time.Now().UnixNano() % 1e9
	if s := os.Getenv("NEURONFS_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Setenv("NEURONFS_SEED", strconv.FormatInt(seed, 10))
	t.Setenv("NEURONFS_STORM_PROCS", "8")
	for _, mode := range []string{deviceFDsSupervisor, deviceFDsFUSE} {
		t.Run(mode, func(t *testing.T) {
			if mode == deviceFDsFUSE && !kernelPassthrough(t) {
				t.Skip(noPassthrough + ": run --device-fds=fuse refuses to start")
			}
			out, err := runClient(t, 2*time.Minute, []string{"--device-fds=" + mode, "--instance=trn1.2xlarge"}, os.Args[0], "__client", "directstorm")
			if err != nil || !strings.Contains(out, "storm ok\n") {
				t.Fatalf("NEURONFS_SEED=%d: %v\n%s", seed, err, out)
			}
		})
	}
}
