package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/runtime"
)

// ClassFile reads an attribute of the neuron_device class under a mount.
func ClassFile(t testing.TB, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "sys/class/neuron_device", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// DeviceCounter reads a number from an attribute of device dev (a memory
// or metrics counter) under a mount, as runtime reads it.
func DeviceCounter(t testing.TB, root string, dev int, path string) uint64 {
	t.Helper()
	v, err := runtime.Host{Root: root}.SysfsCounter(dev, path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// WaitFor polls cond until it holds, failing the test after budget (give
// it the driver's own budget for what is awaited, never a guess at how
// fast a machine is).
func WaitFor(t testing.TB, what string, budget time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(budget)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", budget, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
