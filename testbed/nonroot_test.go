package testbed_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/exitguard"
	"github.com/neuronfs/neuronfs/internal/testenv"
	"github.com/neuronfs/neuronfs/testbed"
)

const (
	// nonRootHelperEnv makes TestNewAsNobodyHelper ask for a testbed.
	nonRootHelperEnv = "NEURONFS_TESTBED_NONROOT_HELPER"
	// asNobodyEnv, MODE:DIR, makes the test binary, started by
	// TestNewAsNobody in a private mount namespace, bind a copy of
	// /dev/fuse with MODE (octal) over it, on a tmpfs at DIR (the host's
	// node is not touched), become nobody and run the helper.
	asNobodyEnv = "NEURONFS_TESTBED_AS_NOBODY"
	// noUsernsMode, after MODE, also refuses user namespaces by seccomp,
	// as Docker's default profile does.
	noUsernsMode = "+nouserns"
	nobody       = 65534
)

func init() {
	spec, ok := os.LookupEnv(asNobodyEnv)
	if !ok {
		return
	}
	os.Unsetenv(asNobodyEnv)
	mode, dir, _ := strings.Cut(spec, ":")
	mode, refuse := strings.CutSuffix(mode, noUsernsMode)
	runtime.LockOSThread() // the thread that sets no_new_privs execs
	err := becomeNobody(dir, mode == "666")
	if err == nil && refuse {
		err = testenv.RefuseUserns()
	}
	if err != nil {
		os.Stderr.WriteString("as nobody: " + err.Error() + "\n")
		os.Exit(2)
	}
	err = syscall.Exec(os.Args[0], os.Args, os.Environ())
	os.Stderr.WriteString("as nobody: exec: " + err.Error() + "\n")
	os.Exit(2)
}

// becomeNobody gives this mount namespace a /dev/fuse that everyone
// (open) or root alone may use, then drops to nobody.
func becomeNobody(dir string, open bool) error {
	mode := uint32(0o600)
	if open {
		mode = 0o666
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=755"); err != nil {
		return err
	}
	node := filepath.Join(dir, "fuse")
	if err := unix.Mknod(node, unix.S_IFCHR|mode, int(unix.Mkdev(10, 229))); err != nil {
		return err
	}
	if err := unix.Chmod(node, mode); err != nil {
		return err
	}
	if err := unix.Mount(node, "/dev/fuse", "", unix.MS_BIND, ""); err != nil {
		return err
	}
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setresgid(nobody, nobody, nobody); err != nil {
		return err
	}
	return syscall.Setresuid(nobody, nobody, nobody)
}

// As nobody, a testbed starts: a command opens a device and asks
// DEVICE_BASIC_INFO, the test reads the state and injects a fault.
func TestNewAsNobodyHelper(t *testing.T) {
	if os.Getenv(nonRootHelperEnv) != "1" {
		t.Skip("run by TestNewAsNobody")
	}
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
	cmd := tb.Command(os.Args[0])
	cmd.Env = append(os.Environ(), ioctlEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("DEVICE_BASIC_INFO inside the testbed: %v\n%s", err, out)
	}
	out, err := tb.Command("id", "-u").Output()
	if err != nil || strings.TrimSpace(string(out)) != "65534" {
		t.Errorf("the command's uid: %q (%v), want 65534", out, err)
	}
	if err := tb.InjectFaults("reset-fail"); err != nil {
		t.Fatal(err)
	}
	if st, err := tb.State(); err != nil || strings.Join(st.Faults, ",") != "reset-fail" {
		t.Errorf("state: faults %q (%v)", st.Faults, err)
	}
	t.Logf("got a testbed, filter view %v", tb.FilterView())
}

// A testbed works without root, as `neuronfs run` does: as nobody with
// a usable /dev/fuse it mounts and serves its commands; without one (an
// unprivileged container) it serves them the filter view.
func TestNewAsNobody(t *testing.T) {
	testutil.RequireFUSE(t) // root, to run the helper as nobody
	if os.Geteuid() != 0 {
		t.Fatal("needs root, to become nobody")
	}
	// The test binary, where nobody can run it.
	dir, err := os.MkdirTemp("", "neuronfs-tb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "testbed.test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		// Not the suite's memory backing: its directory is root's.
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") && !strings.HasPrefix(kv, "NEURONFS_REQUIRE_FUSE=") &&
			!strings.HasPrefix(kv, testbed.SkipEnv+"=") && !strings.HasPrefix(kv, device.BackingEnv+"=") {
			env = append(env, kv)
		}
	}
	fuseDir := filepath.Join(dir, "fuse")
	if err := os.Mkdir(fuseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(mode string, extra ...string) (string, error) {
		cmd := exec.Command(bin, "-test.run", "^TestNewAsNobodyHelper$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(append(env, nonRootHelperEnv+"=1", "TMPDIR="+dir, asNobodyEnv+"="+mode+":"+fuseDir), extra...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("666")
	if err != nil || !strings.Contains(out, "--- PASS: TestNewAsNobodyHelper") || !strings.Contains(out, "got a testbed") {
		t.Errorf("a testbed as nobody: %v\n%s", err, out)
	}
	// Without /dev/fuse (root's alone), as in an unprivileged container:
	// the filter view serves the same helper.
	out, err = run("600")
	if err != nil || !strings.Contains(out, "--- PASS: TestNewAsNobodyHelper") || !strings.Contains(out, "got a testbed, filter view true") {
		t.Errorf("a testbed as nobody without /dev/fuse: %v, want the filter view:\n%s", err, out)
	}
	// With /dev/fuse but user namespaces refused by seccomp (Docker's
	// default profile with the device passed), which no sysctl tells: the
	// mount is refused, and the filter view serves.
	out, err = run("666" + noUsernsMode)
	if err != nil || !strings.Contains(out, "--- PASS: TestNewAsNobodyHelper") || !strings.Contains(out, "got a testbed, filter view true") {
		t.Errorf("a testbed as nobody, user namespaces refused: %v, want the filter view:\n%s", err, out)
	}
}

// copyExecutable copies the file at from to a new executable at to.
func copyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// A test binary running as nobody, SIGKILLed while a testbed and one of
// its commands run, leaves neither the command, the mounter (and with it
// the mount) nor the launch socket: its exit guard kills them.
func TestKilledBinaryAsNobodyLeavesNothing(t *testing.T) {
	testutil.RequireFUSE(t)
	if os.Geteuid() != 0 {
		t.Fatal("needs root, to become nobody")
	}
	dir, err := os.MkdirTemp("", "neuronfs-tb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	bin, fuseDir := filepath.Join(dir, "testbed.test"), filepath.Join(dir, "fuse")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(fuseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(bin, "-test.run", "^TestKilledHelper$", "-test.v")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") && !strings.HasPrefix(kv, device.BackingEnv+"=") {
			env = append(env, kv)
		}
	}
	helper.Env = append(env, killedHelperEnv+"=1", "TMPDIR="+dir, asNobodyEnv+"=666:"+fuseDir)
	helper.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.GuardProcess(t, helper.Process.Pid)
	var root, sockDir string
	var pid, mounter int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "READY %s %d %s", &root, &pid, &sockDir); n == 3 {
			break
		}
	}
	if _, err := fmt.Sscanf(root, "/proc/%d/root", &mounter); err != nil || sockDir == "" {
		helper.Process.Kill()
		helper.Wait()
		t.Fatalf("the helper never reported its testbed through a mounter (root %q)", root)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	helper.Process.Kill()
	helper.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		alive, mounterAlive := syscall.Kill(pid, 0) == nil, syscall.Kill(mounter, 0) == nil
		_, err = os.Stat(sockDir)
		if sock := err == nil; !alive && !mounterAlive && !sock {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("after the helper's SIGKILL: command %d alive %v, mounter %d alive %v, %s there %v", pid, alive, mounter, mounterAlive, sockDir, sock)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
