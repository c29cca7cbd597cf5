package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/chardev"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// dupfds checks what copies of a device descriptor are: dup and
	// fcntl(F_DUPFD*) copies are recognised (fstat shows the character
	// node, mmaps are checked); dup2 onto a low number and SCM_RIGHTS give
	// a copy the filter does not recognise, whose ioctls are the same.
	clients["dupfds"] = func() int {
		fail := clientFail
		var node unix.Stat_t
		if err := unix.Stat("/dev/neuron0", &node); err != nil {
			return fail("%v", err)
		}
		isNode := func(fd int) error {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || st != node {
				return fmt.Errorf("fstat(%d) = %+v (%v), want the node %+v", fd, st, err, node)
			}
			return nil
		}
		works := func(fd int) error {
			var bi ioctl.DeviceBasicInfo
			if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
				return fmt.Errorf("fd %d: DEVICE_BASIC_INFO %d %v", fd, r, e)
			}
			var pid int32
			if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceAppPID, &pid); r != 0 || e != 0 || pid != int32(os.Getpid()) {
				return fmt.Errorf("fd %d: DEVICE_APP_PID %d (%v), want %d", fd, pid, e, os.Getpid())
			}
			return nil
		}
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			return fail("%v", err)
		}
		fd := d.Fd()
		if fd < chardev.FDBase {
			return fail("device fd %d, want one from %d up", fd, chardev.FDBase)
		}
		own, err := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
		if err != nil {
			return fail("%v", err)
		}
		// A mapping the driver refuses without CAP_SYS_RAWIO (part of a
		// chunk), and one it allows (the whole chunk).
		mapping := func(fd int) string {
			part, whole := "ok", "ok"
			if b, err := unix.Mmap(fd, int64(own.PA), 4096, unix.PROT_READ, unix.MAP_SHARED); err != nil {
				part = unix.ErrnoName(err.(unix.Errno))
			} else {
				unix.Munmap(b)
			}
			if b, err := unix.Mmap(fd, int64(own.PA), int(own.Size), unix.PROT_READ, unix.MAP_SHARED); err != nil {
				whole = unix.ErrnoName(err.(unix.Errno))
			} else {
				unix.Munmap(b)
			}
			return part + "/" + whole
		}
		var report []string
		check := func(name string, cp int, recognised bool) error {
			if err := works(cp); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			if recognised {
				if cp < chardev.FDBase {
					return fmt.Errorf("%s: copy at %d, below %d", name, cp, chardev.FDBase)
				}
				if err := isNode(cp); err != nil {
					return fmt.Errorf("%s: %v", name, err)
				}
				report = append(report, name+"="+mapping(cp))
			}
			return nil
		}
		report = append(report, "open="+mapping(fd))
		dup, err := unix.Dup(fd)
		if err != nil {
			return fail("dup: %v", err)
		}
		if err := check("dup", dup, true); err != nil {
			return fail("%v", err)
		}
		// dup's copy does not inherit close-on-exec, F_DUPFD_CLOEXEC's has it.
		if fl, _ := unix.FcntlInt(uintptr(dup), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC != 0 {
			return fail("dup's copy is close-on-exec")
		}
		dupfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fail("F_DUPFD_CLOEXEC: %v", err)
		}
		if err := check("dupfd-cloexec", dupfd, true); err != nil {
			return fail("%v", err)
		}
		if fl, _ := unix.FcntlInt(uintptr(dupfd), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
			return fail("F_DUPFD_CLOEXEC's copy is not close-on-exec")
		}
		high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD, chardev.FDBase+100)
		if err != nil || high < chardev.FDBase+100 {
			return fail("F_DUPFD from %d: %d %v", chardev.FDBase+100, high, err)
		}
		if err := check("dupfd-high", high, true); err != nil {
			return fail("%v", err)
		}
		if err := unix.Dup2(fd, chardev.FDBase+200); err != nil {
			return fail("dup2 into the range: %v", err)
		}
		if err := check("dup2-high", chardev.FDBase+200, true); err != nil {
			return fail("%v", err)
		}
		// The copy of a copy is still followed.
		dup2, err := unix.Dup(dup)
		if err != nil {
			return fail("dup of dup: %v", err)
		}
		if err := check("dup-of-dup", dup2, true); err != nil {
			return fail("%v", err)
		}
		// Onto a number the program chose below the range: the same open
		// file, so the same device and process for every ioctl. A direct
		// descriptor (the device's memory file) is refused there, where
		// its reads and writes would reach the memory unseen.
		if direct, err := directDescriptor(fd); err != nil {
			return fail("%v", err)
		} else if direct {
			if err := unix.Dup3(fd, 20, unix.O_CLOEXEC); err != unix.EBADF {
				return fail("dup3 of a direct descriptor below the range: %v, want EBADF", err)
			}
		} else {
			if err := unix.Dup3(fd, 20, unix.O_CLOEXEC); err != nil {
				return fail("dup3 below the range: %v", err)
			}
			if err := check("dup3-low", 20, false); err != nil {
				return fail("%v", err)
			}
		}
		// SCM_RIGHTS, between two threads of this process (the receiver
		// gets the lowest free number).
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fail("%v", err)
		}
		if err := unix.Sendmsg(pair[0], []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
			return fail("sendmsg: %v", err)
		}
		got, err := receiveFD(os.NewFile(uintptr(pair[1]), "pair"))
		if err != nil {
			return fail("recvmsg: %v", err)
		}
		if err := check("scm-rights", got, false); err != nil {
			return fail("%v", err)
		}
		// Closing copies leaves the others recognised. (A close flushes,
		// and the driver's flush releases the process: that is the
		// driver's, whatever the number of the copy.)
		for _, c := range []int{dup, dupfd, high, chardev.FDBase + 200, got} {
			unix.Close(c)
		}
		unix.Close(20) // the dup3 copy, if any
		if err := isNode(dup2); err != nil {
			return fail("after closing the others: %v", err)
		}
		fmt.Println(strings.Join(report, " "))
		return 0
	}
}

// Copies of a device descriptor made by dup and fcntl(F_DUPFD*) stay in
// the descriptor range the filter recognises, so their fstat shows the
// character node and their mmaps are checked as the original's; copies
// onto a low number (dup2/dup3, SCM_RIGHTS) reach the same open file, so
// the driver sees the same process and device on every ioctl.
func TestRunChardevDupFollowed(t *testing.T) {
	bin := clientCopy(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "open=ok/ok dup=ok/ok dupfd-cloexec=ok/ok dupfd-high=ok/ok dup2-high=ok/ok dup-of-dup=ok/ok"},
		// Without CAP_SYS_RAWIO part of a chunk is refused through every
		// recognised copy.
		{[]string{"--uid=65534", "--gid=65534"}, "open=EPERM/ok dup=EPERM/ok dupfd-cloexec=EPERM/ok dupfd-high=EPERM/ok dup2-high=EPERM/ok dup-of-dup=EPERM/ok"},
	} {
		args := append(append([]string{"run", "--instance=trn1.2xlarge"}, c.args...), "--", bin, "__client", "dupfds")
		out, err := neuronfs(t, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("run %v:\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}

func init() {
	// devstorm starts NEURONFS_STORM_PROCS processes (devstormproc) that
	// open a device, ask it DEVICE_BASIC_INFO and close it, in a loop,
	// NEURONFS_STORM_ITERS times or for NEURONFS_STORM_DURATION. It prints
	// the opens done and the longest one in ns.
	clients["devstorm"] = func() int {
		procs, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_PROCS"))
		type result struct {
			opens, maxNs int64
			err          error
		}
		results := make(chan result, procs)
		for i := 0; i < procs; i++ {
			go func(i int) {
				cmd := exec.Command(os.Args[0], "__client", "devstormproc")
				cmd.Env = append(os.Environ(), fmt.Sprintf("NEURONFS_STORM_INDEX=%d", i))
				cmd.Stderr = os.Stderr
				out, err := cmd.Output()
				var r result
				if err != nil {
					r.err = fmt.Errorf("process %d: %v", i, err)
				} else if _, err := fmt.Sscan(string(out), &r.opens, &r.maxNs); err != nil {
					r.err = fmt.Errorf("process %d said %q", i, out)
				}
				results <- r
			}(i)
		}
		var opens, maxNs int64
		var errs []error
		for i := 0; i < procs; i++ {
			r := <-results
			errs = append(errs, r.err)
			opens += r.opens
			maxNs = max(maxNs, r.maxNs)
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(opens, maxNs)
		return 0
	}
	clients["devstormproc"] = func() int {
		i, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_INDEX"))
		iters, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_ITERS"))
		dur, _ := time.ParseDuration(os.Getenv("NEURONFS_STORM_DURATION"))
		devices, _ := strconv.Atoi(os.Getenv("NEURONFS_STORM_DEVICES"))
		var maxNs int64
		end := time.Now().Add(dur)
		n := 0
		for ; (iters > 0 && n < iters) || (dur > 0 && time.Now().Before(end)); n++ {
			path := fmt.Sprintf("/dev/neuron%d", (i+n)%devices)
			start := time.Now()
			fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				fmt.Fprintf(os.Stderr, "open %s: %v\n", path, err)
				return 1
			}
			maxNs = max(maxNs, time.Since(start).Nanoseconds())
			if fd < chardev.FDBase {
				fmt.Fprintf(os.Stderr, "%s: fd %d below %d\n", path, fd, chardev.FDBase)
				return 1
			}
			var bi ioctl.DeviceBasicInfo
			if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
				fmt.Fprintf(os.Stderr, "%s: DEVICE_BASIC_INFO %d %v\n", path, r, e)
				return 1
			}
			if err := unix.Close(fd); err != nil {
				fmt.Fprintf(os.Stderr, "close %s: %v\n", path, err)
				return 1
			}
		}
		fmt.Println(n, maxNs)
		return 0
	}
}

// storm runs devstorm under run with 16 processes on trn2.48xlarge's 16
// devices and returns its output. A run that does not end within limit is
// a stall: it is killed, and the test fails (a liveness bound, not a
// measurement).
func storm(t testing.TB, limit time.Duration, env ...string) string {
	cmd := exec.Command(os.Args[0], "run", "--instance=trn2.48xlarge", "--", os.Args[0], "__client", "devstorm")
	cmd.Env = append(append(os.Environ(), "NEURONFS_AS_MAIN=1", "NEURONFS_STORM_PROCS=16", "NEURONFS_STORM_DEVICES=16"), env...)
	cmd.Stderr = os.Stderr
	var out []byte
	var err error
	var once sync.Once
	done := make(chan struct{})
	go func() {
		out, err = cmd.Output()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		once.Do(func() {
			if cmd.Process != nil {
				cmd.Process.Kill()
			}
		})
		<-done
		t.Fatalf("16 processes opening devices stalled: no end after %v", limit)
	}
	if err != nil {
		t.Fatalf("storm: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// Sixteen processes opening and closing devices in a loop all get their
// descriptors, in the range, and none stalls.
func TestRunChardevOpenStorm(t *testing.T) {
	testutil.RequireFUSE(t)
	out := storm(t, 5*time.Minute, "NEURONFS_STORM_ITERS=100")
	var opens, maxNs int64
	if _, err := fmt.Sscan(out, &opens, &maxNs); err != nil || opens != 1600 {
		t.Fatalf("storm said %q, want 1600 opens", out)
	}
}

// BenchmarkChardevOpenStorm is the long variant: 16 processes for 10 s.
// It reports device opens per second and the longest open.
func BenchmarkChardevOpenStorm(b *testing.B) {
	testutil.RequireFUSE(b)
	var opens, maxNs int64
	start := time.Now()
	for b.Loop() {
		out := storm(b, 5*time.Minute, "NEURONFS_STORM_DURATION=10s", "NEURONFS_LOCKCHECK=0") // the daemon as it ships
		if _, err := fmt.Sscan(out, &opens, &maxNs); err != nil || opens == 0 {
			b.Fatalf("storm said %q", out)
		}
	}
	b.ReportMetric(float64(opens)/time.Since(start).Seconds(), "opens/s")
	b.ReportMetric(float64(maxNs)/1e6, "ms-max-open")
}

// A process whose descriptor limit leaves no number from FDBase up still
// opens devices as FUSE files: the descriptor goes to the lowest free
// number (where the filter does not recognise it; the daemon logs that).
// A direct descriptor there would read and write the device's whole
// memory unseen: its open fails with EMFILE.
func TestRunChardevLowFDLimit(t *testing.T) {
	script := fmt.Sprintf(`ulimit -n %d && (exec 3<>/dev/neuron0) 2>/dev/null && echo opened || echo refused`, chardev.FDBase/2)
	for _, c := range []struct{ mode, want string }{
		{deviceFDsFUSE, "opened"},
		{deviceFDsSupervisor, "refused"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			if c.mode == deviceFDsFUSE && !kernelPassthrough(t) {
				t.Skip(noPassthrough + ": run --device-fds=fuse refuses to start")
			}
			out, err := neuronfs(t, "run", "--instance=trn1.2xlarge", "--device-fds="+c.mode, "--", "sh", "-c", script).Output()
			if err != nil || strings.TrimSpace(string(out)) != c.want {
				t.Fatalf("open under ulimit -n %d: %v %q, want %q", chardev.FDBase/2, err, out, c.want)
			}
		})
	}
}

// directDescriptor reports whether fd is a direct descriptor (an open of
// a device's memory file), not the device's FUSE file.
func directDescriptor(fd int) (bool, error) {
	link := fmt.Sprintf("/proc/self/fd/%d", fd)
	var sfs unix.Statfs_t
	if err := unix.Statfs(link, &sfs); err != nil {
		return false, err
	}
	path, err := os.Readlink(link)
	if err != nil {
		return false, err
	}
	return sfs.Type != unix.FUSE_SUPER_MAGIC || !strings.HasPrefix(path, "/dev/neuron"), nil
}
