package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/testenv"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The test binary doubles as the neuronfs command (NEURONFS_AS_MAIN, which
// its re-executed children inherit) and as a client program run inside the
// namespace ("TESTBIN __client MODE").
func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	if len(os.Args) == 3 && os.Args[1] == "__client" {
		testutil.JoinGuard()
		os.Exit(clients[os.Args[2]]())
	}
	if os.Getenv("NEURONFS_AS_MAIN") == "1" {
		testutil.JoinGuard()
		main()
		return
	}
	testutil.StartGuard()
	os.Exit(runTests(m))
}

// runTests runs the tests with the default log files of the runs they
// start (logfile.go) in a directory of their own, removed afterwards.
func runTests(m *testing.M) int {
	if dir, err := os.MkdirTemp("", "neuronfs-test-logs-"); err == nil {
		os.Setenv("XDG_RUNTIME_DIR", dir)
		defer os.RemoveAll(dir)
	}
	return m.Run()
}

// clientFail is how a client program reports what it found wrong: one
// line on stderr, exit status 1.
func clientFail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	return 1
}

var clients = map[string]func() int{
	// check verifies every device and sysfs file at the real paths.
	"check": func() int {
		inst, err := dhal.LookupInstance(os.Getenv("NEURONFS_INSTANCE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := testutil.CheckHost("/", inst); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	},
	// user opens a device as whatever user it runs as.
	"user": func() int {
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "open:", err)
			return 1
		}
		var bi ioctl.DeviceBasicInfo
		if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
			fmt.Fprintln(os.Stderr, "DEVICE_BASIC_INFO:", r, e, bi)
			return 1
		}
		fmt.Printf("uid=%d arch=%d\n", os.Getuid(), bi.Architecture)
		return 0
	},
	// wait reports that it runs, then waits for its stdin to close.
	"wait": func() int {
		if _, err := os.Stat("/dev/neuron0"); err != nil {
			fmt.Println("no device:", err)
			return 1
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		return 0
	},
}

// neuronfs is the command running this binary as neuronfs with args. A
// run needs root and /dev/fuse, or what a run without root needs
// (requireRun); any other command needs root and /dev/fuse.
func neuronfs(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if len(args) > 0 && args[0] == "run" {
		requireRun(t)
	} else {
		testutil.RequireFUSE(t)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	cmd.Stderr = os.Stderr
	return cmd
}

// hostView is what `run` could change on the host, and nothing else: any
// program may add or remove host devices meanwhile (a loop device, a
// pty), so entry counts are no measure. Nor is any other mount: another
// run's leftovers may come and go. It lists the neuron entries of /dev
// and of the sysfs directories run covers, the mount table under /dev
// (where run mounts its file system, at /dev/.neuronfs, in its own
// namespace), /sys and /proc/devices, and the neuron lines of
// /proc/devices.
func hostView(t *testing.T) string {
	var b strings.Builder
	for _, dir := range []string{"/dev", "/sys/class", "/sys/devices/virtual", "/sys/module", "/sys/bus/pci/drivers"} {
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "neuron") {
				fmt.Fprintf(&b, "%s/%s\n", dir, e.Name())
			}
		}
	}
	// /sys/dev/char links to a neuron device.
	links, _ := os.ReadDir("/sys/dev/char")
	for _, e := range links {
		if target, err := os.Readlink(filepath.Join("/sys/dev/char", e.Name())); err == nil && strings.Contains(target, "neuron") {
			fmt.Fprintf(&b, "/sys/dev/char/%s -> %s\n", e.Name(), target)
		}
	}
	// Mounts under /dev and /sys and over /proc/devices. The FUSE control
	// filesystem is left out: aborting a connection mounts it where the
	// kernel expects it, once per boot.
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := f[4]
		under := func(dir string) bool { return mp == dir || strings.HasPrefix(mp, dir+"/") }
		if mp == "/sys/fs/fuse/connections" {
			continue
		}
		if under("/dev") || under("/sys") || under("/proc/devices") {
			b.WriteString(line + "\n")
		}
	}
	// The major run registers for its namespace.
	devices, err := os.ReadFile("/proc/devices")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(devices), "\n") {
		if strings.Contains(line, "neuron") {
			fmt.Fprintf(&b, "/proc/devices: %s\n", line)
		}
	}
	return b.String()
}

func TestRunChecksEveryDevice(t *testing.T) {
	for _, inst := range []string{"trn1.32xlarge", "inf2.48xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			before := hostView(t)
			cmd := neuronfs(t, "run", "--instance", inst, "--", os.Args[0], "__client", "check")
			cmd.Env = append(cmd.Env, "NEURONFS_INSTANCE="+inst)
			if out, err := cmd.Output(); err != nil {
				t.Fatalf("client inside run: %v\n%s", err, out)
			}
			if after := hostView(t); after != before {
				t.Fatalf("host changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestRunLeavesHostAloneWhileRunning(t *testing.T) {
	before := hostView(t)
	cmd := neuronfs(t, "run", "--", os.Args[0], "__client", "wait")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	during := hostView(t)
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if line != "ready\n" {
		t.Fatalf("client said %q", line)
	}
	if during != before {
		t.Fatalf("host changed while running:\nbefore:\n%s\nduring:\n%s", before, during)
	}
}

func TestRunExitStatus(t *testing.T) {
	cmd := neuronfs(t, "run", "--", "sh", "-c", "exit 7")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("run -- sh -c 'exit 7': %v, want exit status 7", err)
	}
}

// A non-root command inside run uses the devices (AllowOther).
func TestRunAsUnprivilegedUser(t *testing.T) {
	bin := clientCopy(t)
	cmd := neuronfs(t, "run", "--uid=65534", "--gid=65534", "--", bin, "__client", "user")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client as nobody: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "uid=65534 arch=3") {
		t.Fatalf("client said %q", out)
	}
}

// clientCopy copies the test binary where any user can run it.
func clientCopy(t *testing.T) string { return binaryCopy(t, "client") }

// binaryCopy copies the test binary, as name, into a directory of its own
// that any user can enter, removed when the test ends.
func binaryCopy(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "neuronfs-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, name)
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func isMounted(t *testing.T, dir string) bool {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// waitFor waits for a daemon started by a test: 30 s covers its start-up
// on a loaded machine. A 16-device daemon starts in about 60 ms, but four
// race-detector builds with the lock checker starting at once on a
// loaded 2-core machine took over 10 s (TestNetPodFourCutLink).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, 30*time.Second, cond)
}

func startMount(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := neuronfs(t, append(append([]string{"mount"}, args...), dir)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitMounted(t, cmd, dir)
	return cmd, dir
}

// waitMounted waits for the mount that the started cmd makes at dir.
func waitMounted(t *testing.T, cmd *exec.Cmd, dir string) {
	t.Helper()
	waitFor(t, "the mount", func() bool {
		_, err := os.Stat(filepath.Join(dir, "sys/module/neuron/version"))
		if err != nil && exited(cmd) {
			t.Fatal("the daemon exited before its mount was up (its error is above)")
		}
		return err == nil
	})
}

// exited reports whether cmd's process has ended, leaving it to be reaped
// by cmd.Wait.
func exited(cmd *exec.Cmd) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo != 0
}

func TestMountUnmountsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd, dir := startMount(t, "--instance=inf2.xlarge")
		cmd.Process.Signal(sig)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("after %v: %v", sig, err)
		}
		if isMounted(t, dir) {
			t.Fatalf("still mounted after %v", sig)
		}
	}
}

func TestMountKilledLeavesNothingMounted(t *testing.T) {
	cmd, dir := startMount(t, "--instance=trn1.2xlarge")
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, "the reaper to unmount", func() bool { return !isMounted(t, dir) })
}
