package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/exitguard"
)

// runPytest runs `python3 -m pytest -p no:cacheprovider -v ARGS` in the
// plugin's directory (python/), with this test binary as neuronfs and env
// added, and returns its output and error.
func runPytest(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	py := pytestPython(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, append([]string{"-m", "pytest", "-p", "no:cacheprovider", "-v"}, args...)...)
	cmd.Dir = dir
	// Python is the guarded child; the neuronfs it starts is its own. No
	// host around it but the one the plugin starts.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") && !strings.HasPrefix(kv, hostview.ControlEnv+"=") &&
			!strings.HasPrefix(kv, "PYTHONPATH=") && !strings.HasPrefix(kv, "NEURONFS_SKIP_WITHOUT_HOST=") {
			base = append(base, kv)
		}
	}
	cmd.Env = append(append(base, "PYTHONDONTWRITEBYTECODE=1", "NEURONFS_BIN="+os.Args[0], "NEURONFS_AS_MAIN=1"), env...)
	return guardedOutput(t, cmd)
}

// From its own directory, pytest finds the plugin without -p or an
// installed package (python/conftest.py).
func TestPytestPluginFromItsDirectory(t *testing.T) {
	neuronfs(t, "run") // what run needs, or skip
	out, err := runPytest(t, nil, "--neuron-instance", "trn2.3xlarge", "--neuronfs-arg=--log-level=error", "tests")
	if err != nil {
		t.Fatalf("pytest without -p: %v\n%s", err, out)
	}
	for _, name := range []string{"test_devices_are_character_devices", "test_runs_on_the_instance_it_asks_for"} {
		if !strings.Contains(out, "::"+name+" PASSED") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

// A test that asks for neuron_host in a session without a host errors
// with the line that says what is missing; it skips only when asked to.
func TestPytestNeuronHostWithoutHost(t *testing.T) {
	const line = "no neuronfs host in this session: run pytest with --neuron-instance NAME"
	out, err := runPytest(t, nil, "tests/test_host.py")
	if err == nil || !strings.Contains(out, "ERROR tests/test_host.py::test_devices_are_character_devices") || !strings.Contains(out, line) {
		t.Errorf("pytest without a host: %v, want an error of each test saying %q:\n%s", err, line, out)
	}
	out, err = runPytest(t, []string{"NEURONFS_SKIP_WITHOUT_HOST=1"}, "tests/test_host.py")
	if err != nil || !strings.Contains(out, "test_devices_are_character_devices SKIPPED") || strings.Contains(out, "ERROR") {
		t.Errorf("pytest without a host, NEURONFS_SKIP_WITHOUT_HOST=1: %v, want every test skipped:\n%s", err, out)
	}
}
