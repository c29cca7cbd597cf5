package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/exitguard"
)

// pytestPython finds a python3 that can import pytest: the first on PATH,
// else the system's (a PATH python from pyenv or a venv may lack it).
func pytestPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import pytest").Run() == nil {
			return path
		}
	}
	if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
		t.Fatal("no python3 with pytest (Debian: python3-pytest)")
	}
	t.Skip("no python3 with pytest (Debian: python3-pytest)")
	return ""
}

// The pytest plugin (python/pytest_neuronfs) re-runs its suite inside
// `neuronfs run` (this test binary as neuronfs), once for the default
// instance and once for the module that asks for another; its fixture
// injects a reset failure and reads the state through the control
// interface.
func TestPytestPlugin(t *testing.T) {
	neuronfs(t) // root and /dev/fuse, or skip
	py := pytestPython(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "pytest", "-p", "pytest_neuronfs", "-p", "no:cacheprovider", "-v",
		"--neuron-instance", "trn2.3xlarge", "--neuronfs-arg=--log-level=error", "tests")
	cmd.Dir = dir
	// Python is the guarded child; the neuronfs it starts is its own.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1",
		"NEURONFS_BIN="+os.Args[0], "NEURONFS_AS_MAIN=1")
	out, err := guardedOutput(t, cmd)
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	wantPytestPassed(t, out)
}

// wantPytestPassed checks that every test of the plugin's suite passed.
func wantPytestPassed(t *testing.T, out string) {
	t.Helper()
	for _, name := range []string{"test_devices_are_character_devices", "test_state_follows_an_open", "test_reset_failure", "test_bad_fault_list", "test_runs_on_the_instance_it_asks_for", "test_fail_call", "test_fail_calls_randomly"} {
		if !strings.Contains(out, "::"+name+" PASSED") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

// The plugin works without root, as run does: pytest as nobody starts its
// sessions in rootless hosts and writes faults there.
func TestPytestPluginRootless(t *testing.T) {
	py := pytestPython(t)
	bin := binaryCopy(t, "neuronfs")
	dir, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := asNobody(t, bin)
	// asnobody execs python, not the binary.
	pytest := []string{py, "-m", "pytest", "-p", "pytest_neuronfs", "-p", "no:cacheprovider", "-v",
		"--neuron-instance", "trn2.3xlarge", "--neuronfs-arg=--log-level=error", "tests"}
	for i, kv := range cmd.Env {
		if strings.HasPrefix(kv, nobodyArgsEnv+"=") {
			cmd.Env[i] = nobodyArgsEnv + "=" + strings.Join(pytest, "\t")
		}
	}
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1", "NEURONFS_BIN="+bin)
	out, err := guardedOutput(t, cmd)
	if err != nil {
		t.Fatalf("pytest as nobody: %v\n%s", err, out)
	}
	wantPytestPassed(t, out)
}

// guardedOutput runs cmd, registered with the binary's exit guard so a
// killed test leaves it behind no more than a mount, and returns its
// combined output.
func guardedOutput(t *testing.T, cmd *exec.Cmd) (string, error) {
	t.Helper()
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.GuardProcess(t, cmd.Process.Pid)
	err := cmd.Wait()
	return buf.String(), err
}

// The plugin works inside what an unprivileged container gives (no
// /dev/fuse, user namespaces refused by seccomp, uid nobody): its
// `neuronfs run` picks the filter view (auto) and the suite passes.
func TestPytestPluginContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root, to make the container's conditions")
	}
	py := pytestPython(t)
	bin := binaryCopy(t, "neuronfs")
	dir, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	pytest := []string{py, "-m", "pytest", "-p", "pytest_neuronfs", "-p", "no:cacheprovider", "-v",
		"--neuron-instance", "trn2.3xlarge", "--neuronfs-arg=--log-level=error", "tests"}
	cmd := exec.Command(bin, "__client", "ascontainer")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		// nobody's daemon takes memfds, auto decides alone, and python is
		// the guarded child.
		if !strings.HasPrefix(kv, device.BackingEnv+"=") && !strings.HasPrefix(kv, hostViewEnv+"=") && !strings.HasPrefix(kv, exitguard.JoinEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "NEURONFS_AS_MAIN=1", containerArgsEnv+"="+strings.Join(pytest, "\t"),
		"PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1", "NEURONFS_BIN="+bin, "HOME=/tmp")
	out, err := guardedOutput(t, cmd)
	if err != nil {
		t.Fatalf("pytest in a container's conditions: %v\n%s", err, out)
	}
	wantPytestPassed(t, out)
}
