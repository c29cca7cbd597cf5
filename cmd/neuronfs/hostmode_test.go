package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/ns"
	"github.com/neuronfs/neuronfs/runtime"
)

// Host mode changes the host's /dev and /sys, so the test runs it in a
// private mount namespace whose /dev is a tmpfs replica (devtmpfs is one
// filesystem for every namespace): the code is the same, the machine's
// real /dev and /sys never see it, and whatever a failing run leaves
// dies with the namespace. NEURONFS_HOSTMODE_REAL=1 runs it on the real
// host instead (t.Cleanup then runs 'neuronfs cleanup').

func init() {
	clients["hostmode"] = hostModeClient
	clients["fusemount"] = fuseMountClient
}

// fuseMountClient serves a mount at $FUSEMOUNT_DIR with no reaper, so a
// SIGKILL leaves a dead mount behind.
func fuseMountClient() int {
	sys, err := device.NewSystem(device.Config{Instance: "inf2.xlarge", Major: 244})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if _, err := fs.Mount(sys, os.Getenv("FUSEMOUNT_DIR"), fs.Options{}); err != nil {
		fmt.Println(err)
		return 1
	}
	// Only now has Mount closed the files its self-test opened in the
	// mount: killed while one is open, the process would hang at exit
	// flushing it to itself.
	fmt.Println("ready")
	select {}
}

func TestHostMode(t *testing.T) {
	testutilRequireFUSE(t)
	state := t.TempDir()
	real := os.Getenv("NEURONFS_HOSTMODE_REAL") == "1"
	cmd := exec.Command(os.Args[0], "__client", "hostmode")
	cmd.Env = append(os.Environ(), "HOSTMODE_STATE="+state)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !real {
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS // and rprivate, by Go
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "client.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	log := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if real {
			c := exec.Command(os.Args[0], "cleanup", "--state-dir", state)
			c.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
			if b, err := c.CombinedOutput(); err != nil {
				t.Errorf("cleanup after the test: %v\n%s", err, b)
			}
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("host mode: %v\n%s", err, log())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("host mode test hung\n%s", log())
	}
	t.Log(log())
}

// testutilRequireFUSE is testutil.RequireFUSE (kept local to avoid
// importing testutil's mount helpers into the client).
func testutilRequireFUSE(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || syscall.Access("/dev/fuse", 6) != nil {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatal("NEURONFS_REQUIRE_FUSE=1 but host mode needs root and /dev/fuse")
		}
		t.Skip("needs root and /dev/fuse")
	}
}

// hostModeClient runs the scenario; its status is the test's verdict.
func hostModeClient() int {
	if os.Getenv("NEURONFS_HOSTMODE_REAL") != "1" {
		if _, err := ns.Overlay("/dev"); err != nil {
			fmt.Println("replica of /dev:", err)
			return 1
		}
	}
	h := hostScenario{state: os.Getenv("HOSTMODE_STATE")}
	if err := h.run(); err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	return 0
}

type hostScenario struct{ state string }

func (h hostScenario) neuronfs(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	return cmd
}

// snapshot is what must come back exactly: the mounts where host mode
// mounts (/dev, /sys, its state directory) and the directories it
// touches. Nothing else: the namespace starts as a copy of the host's,
// with whatever another run left behind, and cleanup rightly detaches
// such a leftover if its daemon is dead. The FUSE control filesystem is
// left out: an abort mounts it where the kernel expects it.
func (h hostScenario) snapshot() (string, error) {
	var b strings.Builder
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] == "/sys/fs/fuse/connections" {
			continue
		}
		for _, dir := range []string{"/dev", "/sys", h.state} {
			if f[4] == dir || strings.HasPrefix(f[4], dir+"/") {
				b.WriteString(line + "\n")
				break
			}
		}
	}
	for _, dir := range []string{"/dev", "/sys/class", "/sys/devices/virtual", "/sys/module", h.state} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return "", err
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name()+" "+e.Type().String())
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "%s: %s\n", dir, strings.Join(names, ", "))
	}
	return b.String(), nil
}

// daemon is a running 'mount --host'.
type daemon struct {
	cmd  *exec.Cmd
	done chan error
}

func (d *daemon) kill()                   { d.cmd.Process.Kill(); <-d.done }
func (d *daemon) signal(s syscall.Signal) { d.cmd.Process.Signal(s) }
func (d *daemon) wait() error             { return <-d.done }

func (h hostScenario) start() (*daemon, error) {
	cmd := h.neuronfs("mount", "--host", "--state-dir", h.state, "--instance", "inf2.xlarge")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	for {
		_, err1 := os.Stat("/sys/module/neuron/version")
		_, err2 := os.Stat("/sys/devices/virtual/neuron_device/neuron0/core_count")
		if err1 == nil && err2 == nil {
			return d, nil
		}
		select {
		case err := <-d.done:
			return nil, fmt.Errorf("host mode exited at start: %v", err)
		case <-deadline:
			d.kill()
			return nil, errors.New("host mode did not come up")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// check uses the devices at the host's own paths, as a container would.
func (h hostScenario) check() error {
	d, err := runtime.System.Open(0)
	if err != nil {
		return err
	}
	defer d.Close()
	bi, err := d.BasicInfo()
	if err != nil {
		return err
	}
	if bi.Architecture != 2 {
		return fmt.Errorf("DEVICE_BASIC_INFO architecture %d, want 2 (inf2)", bi.Architecture)
	}
	if v, err := runtime.System.DriverVersion(); err != nil || v != "2.25.4.0" {
		return fmt.Errorf("driver version %q %v", v, err)
	}
	if l, err := os.Readlink("/sys/class/neuron_device/neuron0"); err != nil || l != "../../devices/virtual/neuron_device/neuron0" {
		return fmt.Errorf("class link %q %v", l, err)
	}
	if st, err := os.Stat("/dev/neuron0"); err != nil || st.Mode().Perm() != 0o666 {
		return fmt.Errorf("/dev/neuron0: %v %v", st, err)
	}
	// The host's own entries are still there around ours.
	for _, p := range []string{"/sys/class/net", "/sys/devices/virtual/mem", "/dev/null", "/dev/fuse"} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("host entry hidden: %v", err)
		}
	}
	return nil
}

// expectRefusal runs a command that must fail with status 1 and a message.
func (h hostScenario) expectRefusal(what string, want string, args ...string) error {
	out, err := h.neuronfs(args...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), want) {
		return fmt.Errorf("%s: %v %q, want status 1 with %q", what, err, out, want)
	}
	return nil
}

func (h hostScenario) run() error {
	before, err := h.snapshot()
	if err != nil {
		return err
	}
	compare := func(when string) error {
		after, err := h.snapshot()
		if err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("host differs %s:\nbefore:\n%s\nafter:\n%s", when, before, after)
		}
		return nil
	}

	// An orderly stop.
	d, err := h.start()
	if err != nil {
		return err
	}
	if err := h.check(); err != nil {
		d.kill()
		return err
	}
	if err := h.expectRefusal("a second host mount", "is active", "mount", "--host", "--state-dir", h.state); err != nil {
		d.kill()
		return err
	}
	if err := h.expectRefusal("cleanup of a live daemon", "is running", "cleanup", "--state-dir", h.state); err != nil {
		d.kill()
		return err
	}
	d.signal(syscall.SIGTERM)
	if err := d.wait(); err != nil {
		return fmt.Errorf("host mode after SIGTERM: %v", err)
	}
	if err := compare("after SIGTERM"); err != nil {
		return err
	}
	fmt.Println("SIGTERM: host restored")

	// A state directory the daemon made goes with it (/run/neuronfs).
	made := hostScenario{state: filepath.Join(h.state, "made")}
	if d, err = made.start(); err != nil {
		return err
	}
	d.signal(syscall.SIGTERM)
	if err := d.wait(); err != nil {
		return fmt.Errorf("host mode with a new state directory, after SIGTERM: %v", err)
	}
	if _, err := os.Lstat(made.state); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the state directory it made is left: %v", err)
	}
	fmt.Println("SIGTERM: the state directory it made is gone")

	// A kill, then cleanup.
	if d, err = h.start(); err != nil {
		return err
	}
	if err := h.check(); err != nil {
		d.kill()
		return err
	}
	d.kill()
	if err := h.expectRefusal("host mount over a dead one's binds", "neuronfs cleanup", "mount", "--host", "--state-dir", h.state); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(h.state, hostStateFile)); err != nil {
		return fmt.Errorf("no state after SIGKILL: %v", err)
	}
	out, err := h.neuronfs("cleanup", "--state-dir", h.state).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cleanup: %v\n%s", err, out)
	}
	// The killed daemon's reaper may still be detaching its mount.
	deadline := time.Now().Add(10 * time.Second)
	for compare("after SIGKILL and cleanup") != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := compare("after SIGKILL and cleanup"); err != nil {
		return err
	}
	fmt.Println("SIGKILL + cleanup: host restored")
	if err := h.staleState(compare); err != nil {
		return err
	}
	return h.deadMount(compare)
}

// staleState: a killed daemon whose mounts someone else removed left only
// its state and empty node files; the next daemon clears them and starts.
func (h hostScenario) staleState(compare func(string) error) error {
	d, err := h.start()
	if err != nil {
		return err
	}
	d.kill()
	dir, err := openStateDir(h.state, false)
	if err != nil {
		return err
	}
	defer dir.Close()
	st, err := loadHostState(dir)
	if err != nil {
		return err
	}
	for i := len(st.Changes) - 1; i >= 0; i-- {
		if c := st.Changes[i]; c.Kind != changeFile {
			if err := unix.Unmount(c.Path, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s by hand: %v", c.Path, err)
			}
		}
	}
	unix.Unmount(st.Mountpoint, unix.MNT_DETACH) // unless the reaper did
	if _, err := os.Stat("/dev/neuron0"); err != nil {
		return fmt.Errorf("the killed daemon's node file should remain: %v", err)
	}
	if d, err = h.start(); err != nil {
		return fmt.Errorf("host mode over a stale state: %v", err)
	}
	if err := h.check(); err != nil {
		d.kill()
		return err
	}
	d.signal(syscall.SIGTERM)
	if err := d.wait(); err != nil {
		return fmt.Errorf("host mode after SIGTERM: %v", err)
	}
	if err := compare("after a stale state"); err != nil {
		return err
	}
	fmt.Println("stale state: cleared at the next start")
	return nil
}

// deadMount: cleanup also detaches a neuronfs mount whose daemon died,
// and leaves a live daemon's mount alone.
func (h hostScenario) deadMount(compare func(string) error) error {
	type testMount struct {
		dir string
		cmd *exec.Cmd
	}
	mounted := func(dir string) bool {
		mounts, _ := readMounts()
		m, ok := topMountAt(mounts, dir)
		return ok && m.neuronfs()
	}
	start := func() (*testMount, error) {
		dir, err := os.MkdirTemp("", "neuronfs-dead-")
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(os.Args[0], "__client", "fusemount")
		cmd.Env = append(os.Environ(), "FUSEMOUNT_DIR="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" || !mounted(dir) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("the test mount did not come up: %q", line)
		}
		return &testMount{dir, cmd}, nil
	}
	dead, err := start()
	if err != nil {
		return err
	}
	defer os.Remove(dead.dir)
	live, err := start()
	if err != nil {
		return err
	}
	defer os.Remove(live.dir)
	dead.cmd.Process.Kill()
	dead.cmd.Wait()
	if !mounted(dead.dir) {
		live.cmd.Process.Kill()
		live.cmd.Wait()
		return errors.New("the killed daemon's mount went away by itself; nothing to clean up")
	}
	out, err := h.neuronfs("cleanup", "--state-dir", h.state).CombinedOutput()
	liveLeft := mounted(live.dir)
	live.cmd.Process.Kill()
	live.cmd.Wait()
	if err != nil || !strings.Contains(string(out), "detached the dead mount "+dead.dir) {
		return fmt.Errorf("cleanup of a dead mount: %v\n%s", err, out)
	}
	if mounted(dead.dir) {
		return errors.New("the dead mount is still there after cleanup")
	}
	if !liveLeft || strings.Contains(string(out), live.dir) {
		return fmt.Errorf("cleanup detached a live daemon's mount:\n%s", out)
	}
	// Now that one is dead too.
	if out, err := h.neuronfs("cleanup", "--state-dir", h.state).CombinedOutput(); err != nil || mounted(live.dir) {
		return fmt.Errorf("second cleanup: %v\n%s", err, out)
	}
	if err := compare("after cleaning a dead mount"); err != nil {
		return err
	}
	fmt.Println("dead mount: detached")
	return nil
}
