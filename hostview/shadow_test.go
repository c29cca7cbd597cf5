package hostview

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/chardev"
)

// The shadow routes the emulated paths (nodes, the driver's sysfs, the
// directories that list them, /proc/devices) to its tree and leaves the
// host's paths alone; its links resolve inside it, to attributes known
// by path.
func TestShadowRoutes(t *testing.T) {
	sys, err := device.NewSystem(device.Config{Instance: "trn2.3xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	v, err := NewShadow(sys)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := v.Remove(); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []struct {
		path string
		kind chardev.RouteKind
	}{
		{"/dev/neuron0", chardev.RouteDevice},
		{"/dev/null", chardev.RouteReal},
		{"/dev", chardev.RouteShadow},
		{"/sys/class/neuron_device", chardev.RouteShadow},
		{"/sys/class/neuron_device/neuron0/core_count", chardev.RouteShadow},
		{"/sys/class", chardev.RouteShadow},
		{"/sys/class/net", chardev.RouteReal},
		{"/sys/module/neuron/version", chardev.RouteShadow},
		{"/sys/dev/char/244:0", chardev.RouteShadow},
		{"/proc/devices", chardev.RouteShadow},
		{"/proc/cpuinfo", chardev.RouteReal},
		{"/etc/passwd", chardev.RouteReal},
		{ControlPath + "/faults", chardev.RouteShadow},
	} {
		if r := v.Route(c.path); r.Kind != c.kind {
			t.Errorf("%s: kind %d, want %d", c.path, r.Kind, c.kind)
		}
	}
	if r := v.Route(ControlPath + "/faults"); !r.Own {
		t.Error("the control files are not the daemon user's")
	}
	r := v.Route("/sys/class/neuron_device/neuron0/dev")
	real, err := filepath.EvalSymlinks(r.Shadow)
	if err != nil || !strings.HasPrefix(real, v.Root()+"/sys/devices/virtual/neuron_device/neuron0/") {
		t.Fatalf("neuron0/dev resolves to %q (%v)", real, err)
	}
	i, ok := v.Attribute(real)
	if !ok {
		t.Fatalf("%s is no attribute", real)
	}
	if got := v.Attr(i).Show(); got != "244:0\n" {
		t.Errorf("neuron0/dev shows %q", got)
	}
	st, err := os.Stat(real)
	if err != nil || st.Size() != 4096 || st.Mode().Perm() != 0o444 {
		t.Errorf("neuron0/dev's shadow: %v, size %d, mode %v; want a page, 0444", err, st.Size(), st.Mode())
	}
	procDevices, err := os.ReadFile(v.Route("/proc/devices").Shadow)
	if err != nil || !strings.Contains(string(procDevices), "244 neuron\n") {
		t.Errorf("/proc/devices: %v\n%s", err, procDevices)
	}
	// The merged /dev lists the host's entries and the nodes.
	names, err := os.ReadDir(v.Route("/dev").Shadow)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, e := range names {
		found[e.Name()] = true
	}
	if !found["null"] || !found["neuron0"] {
		t.Errorf("/dev lists %v, want null and neuron0 among them", names)
	}
}

// A shadow tree left by a killed daemon goes when the next view is built;
// a live daemon's stays.
func TestShadowRemovesStale(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", shadowPrefix, dead.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	live, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", shadowPrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	defer os.RemoveAll(stale)
	removeStaleShadows()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's tree stayed: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live daemon's tree went: %v", err)
	}
}
