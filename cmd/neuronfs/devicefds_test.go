package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// memTotal is the device memory accounted to core 0 of neuron0.
const memTotal = "neuron_core0/stats/memory_usage/device_mem/total"

func init() {
	// directfds checks, inside run, what a device descriptor must do
	// whatever it is: the driver's answers, device and host chunks'
	// mappings coherent with the daemon's memory both ways, an open kept
	// by a child after the parent's close, a killed process's memory
	// freed, reset, DMA rings, notification queues, exec doorbells and
	// signals (devicefds_checks_test.go).
	clients["directfds"] = func() int {
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			return clientFail("%v", err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(d.Fd(), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return clientFail("fstat of the device fd %d: %v, mode %#o", d.Fd(), err, st.Mode)
		}
		var bi ioctl.DeviceBasicInfo
		if r, e := testutil.Ioctl(d.Fd(), ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
			return clientFail("DEVICE_BASIC_INFO: %d %v %+v", r, e, bi)
		}
		m, err := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
		if err != nil {
			return clientFail("%v", err)
		}
		if err := checkCoherent(m, "device chunk"); err != nil {
			return clientFail("%v", err)
		}
		h, err := d.Alloc(1<<20, runtime.AllocOptions{Host: true})
		if err != nil {
			return clientFail("%v", err)
		}
		if err := checkCoherent(h, "host chunk"); err != nil {
			return clientFail("%v", err)
		}

		// A child that inherits a descriptor keeps the open after the
		// parent's close.
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		child := exec.Command(os.Args[0], "__client", "directchild")
		child.Env = append(os.Environ(), "NEURONFS_CHILD_FD="+strconv.Itoa(fd))
		child.Stderr = os.Stderr
		in, _ := child.StdinPipe()
		out, _ := child.StdoutPipe()
		if err := child.Start(); err != nil {
			return clientFail("%v", err)
		}
		childOut := bufio.NewReader(out)
		if line, _ := childOut.ReadString('\n'); line != "ready\n" {
			return clientFail("child: %q", line)
		}
		unix.Close(fd)
		fmt.Fprintln(in, "go")
		if line, _ := childOut.ReadString('\n'); line != "ok\n" {
			return clientFail("child after the parent's close: %q", line)
		}
		in.Close()
		if err := child.Wait(); err != nil {
			return clientFail("child: %v", err)
		}

		// A killed process's memory is freed.
		host := runtime.Host{Root: "/"}
		before, err := host.SysfsCounter(0, memTotal)
		if err != nil {
			return clientFail("%v", err)
		}
		killed := exec.Command(os.Args[0], "__client", "directalloc")
		killed.Stderr = os.Stderr
		kout, _ := killed.StdoutPipe()
		if err := killed.Start(); err != nil {
			return clientFail("%v", err)
		}
		if line, _ := bufio.NewReader(kout).ReadString('\n'); line != "ready\n" {
			return clientFail("allocating child: %q", line)
		}
		if held, _ := host.SysfsCounter(0, memTotal); held < before+4<<20 {
			return clientFail("device memory %d with a child's 4 MiB, %d before", held, before)
		}
		killed.Process.Kill()
		killed.Wait()
		// The release is immediate (the daemon watches the process's
		// pidfd); the deadline only ends a failing test.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			now, _ := host.SysfsCounter(0, memTotal)
			if now == before {
				break
			}
			if time.Now().After(deadline) {
				return clientFail("device memory %d after the child was killed, %d before", now, before)
			}
		}
		// What a runtime does next: a core reset, a DMA ring run to its
		// completion marker, an exec doorbell whose records the PE
		// writes into a mapped notification queue, a mapped ring, and
		// the long commands under a signal storm.
		if err := bringupDMAAndExec(d); err != nil {
			return clientFail("%v", err)
		}
		if err := checkDMARing(d); err != nil {
			return clientFail("%v", err)
		}
		signals, err := checkSignals(d, time.Second)
		if err != nil {
			return clientFail("under SIGALRM (%d sent): %v", signals, err)
		}
		// What the descriptor is underneath: the device's FUSE file, or
		// a memory file (a memfd, a file of the backing directory, or one
		// of the compact store, which is a FUSE file of its own).
		var sfs unix.Statfs_t
		link := fmt.Sprintf("/proc/self/fd/%d", d.Fd())
		if err := unix.Statfs(link, &sfs); err != nil {
			return clientFail("%v", err)
		}
		path, _ := os.Readlink(link)
		kind := "memory-file"
		if sfs.Type == unix.FUSE_SUPER_MAGIC && strings.HasPrefix(path, "/dev/neuron") {
			kind = "fuse"
		}
		fmt.Println("ok", kind, "signals", signals)
		return 0
	}
	// directchild waits for a line, then uses the inherited descriptor
	// $NEURONFS_CHILD_FD.
	clients["directchild"] = func() int {
		fd, _ := strconv.Atoi(os.Getenv("NEURONFS_CHILD_FD"))
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n')
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return clientFail("fstat of inherited fd %d: %v, mode %#o", fd, err, st.Mode)
		}
		var bi ioctl.DeviceBasicInfo
		if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
			return clientFail("DEVICE_BASIC_INFO on inherited fd %d: %d %v", fd, r, e)
		}
		fmt.Println("ok")
		return 0
	}
	// directrefuse prints what the calls a device file has no operation
	// for answer on a device descriptor, and what the locks the daemon
	// keeps for itself answer.
	clients["directrefuse"] = func() int {
		rw, err := unix.Open("/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		ro, err := unix.Open("/dev/neuron0", unix.O_RDONLY, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		name := func(err error) string {
			if err == nil || err == unix.Errno(0) {
				return "ok"
			}
			return unix.ErrnoName(err.(unix.Errno))
		}
		buf := make([]byte, 16)
		_, readErr := unix.Read(rw, buf)
		_, writeErr := unix.Write(rw, buf)
		_, writeRO := unix.Write(ro, buf)
		_, preadErr := unix.Pread(rw, buf, 0)
		_, seekErr := unix.Seek(rw, 4096, 0)
		truncErr := unix.Ftruncate(rw, 0)
		fallocErr := unix.Fallocate(rw, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096)
		low := unix.Flock_t{Type: unix.F_WRLCK, Start: 0, Len: 4096}
		lowErr := unix.FcntlFlock(uintptr(rw), unix.F_OFD_SETLK, &low)
		high := unix.Flock_t{Type: unix.F_UNLCK, Start: 1 << 62, Len: 1 << 20}
		highErr := unix.FcntlFlock(uintptr(rw), unix.F_OFD_SETLK, &high)
		whole := unix.Flock_t{Type: unix.F_UNLCK}
		wholeErr := unix.FcntlFlock(uintptr(rw), unix.F_OFD_SETLK, &whole)
		var bi ioctl.DeviceBasicInfo
		_, after := testutil.Ioctl(rw, ioctl.CmdDeviceBasicInfo, &bi)
		fmt.Printf("read=%s write=%s write-ro=%s pread=%s lseek=%s ftruncate=%s fallocate=%s lock-low=%s unlock-high=%s unlock-all=%s ioctl=%s\n",
			name(readErr), name(writeErr), name(writeRO), name(preadErr), name(seekErr), name(truncErr), name(fallocErr), name(lowErr), name(highErr), name(wholeErr), name(after))
		return 0
	}
	// directalloc holds 4 MiB of core 0's device memory until killed.
	clients["directalloc"] = func() int {
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			return clientFail("%v", err)
		}
		if _, err := d.Alloc(4<<20, runtime.AllocOptions{}); err != nil {
			return clientFail("%v", err)
		}
		fmt.Println("ready")
		// Not select{}: without cgo (a static build) the runtime calls
		// a process with nothing left to wake it a deadlock and exits.
		for {
			time.Sleep(time.Hour)
		}
	}
}

// Under run, a device descriptor of either kind (the FUSE file, or the
// device's memory file served by the supervisor) answers ioctls, maps
// the daemon's memory both ways, lives until its last reference and
// frees a killed process's memory.
func TestRunDeviceFDs(t *testing.T) {
	// Where run can only take the filter view (an unprivileged container:
	// no /dev/fuse, no user namespace), FUSE descriptors are refused for
	// that reason instead.
	fuseRefusal := "FUSE passthrough is unavailable"
	if v, err := defaultHostView().resolve(); err == nil && v == hostViewFilter {
		fuseRefusal = "--host-view=filter serves the character devices with supervisor descriptors"
	}
	for _, c := range []struct {
		name, mode, want string
		fileBacking      bool
		noPassthrough    bool // as on a kernel without FUSE passthrough
	}{
		{"supervisor", deviceFDsSupervisor, "ok memory-file", false, false},
		{"supervisor/file-backing", deviceFDsSupervisor, "ok memory-file", true, false},
		{"fuse", deviceFDsFUSE, "ok fuse", false, false},
		{"auto", deviceFDsAuto, "ok", false, false}, // fuse where the kernel has passthrough
		{"auto/no-passthrough", deviceFDsAuto, "ok memory-file", false, true},
		{"supervisor/no-passthrough", deviceFDsSupervisor, "ok memory-file", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.mode == deviceFDsFUSE && (!strings.HasPrefix(fuseRefusal, "FUSE") || !kernelPassthrough(t)) {
				t.Skip("run --device-fds=fuse refuses to start here, as checked below: " + fuseRefusal)
			}
			args := []string{"run", "--device-fds=" + c.mode}
			if c.fileBacking {
				args = append(args, "--memory-backing=file:"+t.TempDir())
			}
			cmd := neuronfs(t, append(args, "--", os.Args[0], "__client", "directfds")...)
			if c.noPassthrough {
				cmd.Env = append(cmd.Env, fs.NoPassthroughEnv+"=1")
			}
			out, err := cmd.Output()
			if err != nil || !strings.HasPrefix(string(out), c.want) {
				t.Fatalf("%v %q, want %q", err, out, c.want)
			}
		})
	}
	// FUSE descriptors without passthrough still refuse to start.
	cmd := neuronfs(t, "run", "--device-fds=fuse", "--", "true")
	cmd.Env = append(cmd.Env, fs.NoPassthroughEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), fuseRefusal) {
		t.Errorf("run --device-fds=fuse without passthrough: %v, %q", err, stderr.String())
	}
}

// noPassthrough is why a run lacks FUSE passthrough when kernelPassthrough
// says so.
const noPassthrough = "FUSE passthrough is unavailable to run (Linux < 6.9, or run without root: the kernel allows it to CAP_SYS_ADMIN on the host only; or run can only take the filter view: no /dev/fuse or user namespace)"

// kernelPassthrough reports whether run gets FUSE passthrough here:
// whether run --no-chardev (FUSE device files only, which need it for
// mmap) starts rather than naming passthrough as missing.
func kernelPassthrough(t *testing.T) bool {
	t.Helper()
	cmd := neuronfs(t, "run", "--no-chardev", "--", "true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil && (strings.Contains(stderr.String(), "FUSE passthrough is unavailable") || strings.Contains(stderr.String(), "--host-view=filter serves")) {
		return false
	}
	if err != nil {
		t.Fatalf("run --no-chardev -- true: %v\n%s", err, stderr.String())
	}
	return true
}

// The supervisor's descriptors come with the character devices: asking
// for both them and --no-chardev is a usage error, while
// $NEURONFS_DEVICE_FDS gives way to --no-chardev.
func TestRunDeviceFDsNeedChardev(t *testing.T) {
	cmd := neuronfs(t, "run", "--no-chardev", "--device-fds=supervisor", "--", "true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "--no-chardev") {
		t.Errorf("run --no-chardev --device-fds=supervisor: %v, %q; want status 2 naming --no-chardev", err, stderr.String())
	}
	// --degraded-mmap: without the character devices run serves FUSE
	// files, which refuse to start without passthrough (Linux < 6.9).
	cmd = neuronfs(t, "run", "--no-chardev", "--degraded-mmap", "--", "true")
	cmd.Env = append(cmd.Env, deviceFDsEnv+"=supervisor")
	if err := cmd.Run(); err != nil {
		t.Errorf("run --no-chardev with $%s=supervisor: %v", deviceFDsEnv, err)
	}
}

// A direct descriptor answers the calls a device file has no operation
// for as the device file does, not as the memory file behind it would,
// and keeps the daemon's own lock on it out of the client's reach.
func TestRunDeviceFDsRefusals(t *testing.T) {
	const want = "read=EINVAL write=EINVAL write-ro=EBADF pread=EINVAL lseek=ESPIPE ftruncate=EINVAL fallocate=ENODEV lock-low=ok unlock-high=ENOLCK unlock-all=ENOLCK ioctl=ok"
	out, err := neuronfs(t, "run", "--device-fds=supervisor", "--", os.Args[0], "__client", "directrefuse").Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The supervisor's descriptors keep the mmap rules run enforces.
func TestRunDeviceFDsChecksMmap(t *testing.T) {
	bin := clientCopy(t)
	const want = "own=ok own-part=EPERM raw=EPERM foreign-ro=ok foreign-rw=ok unaligned=EINVAL rdonly-rw=EACCES grow=EFAULT shrink=ok"
	out, err := neuronfs(t, "run", "--device-fds=supervisor", "--uid=65534", "--gid=65534", "--", bin, "__client", "mmap").Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
