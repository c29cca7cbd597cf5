package hostview

import (
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/chardev"
)

// Route takes any path a filtered program names (made absolute and
// clean by the supervisor, but fuzzed raw here): it never panics, a
// device route names a device, and a shadow route stays in the tree.
func FuzzShadowRoute(f *testing.F) {
	sys, err := device.NewSystem(device.Config{Instance: "trn1.2xlarge", Major: 244})
	if err != nil {
		f.Fatal(err)
	}
	defer sys.Close()
	v, err := NewShadow(sys)
	if err != nil {
		f.Fatal(err)
	}
	defer v.Remove()
	for _, p := range []string{"/dev/neuron0", "/sys/class/neuron_device/neuron0/dev", "/sys", "/", "", "/proc/devices/x", ControlPath + "/faults", "/sys/class/../class"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r := v.Route(path)
		switch r.Kind {
		case chardev.RouteReal:
		case chardev.RouteDevice:
			if r.Minor < 0 || r.Minor >= len(sys.Devices) {
				t.Fatalf("%q: minor %d of %d devices", path, r.Minor, len(sys.Devices))
			}
		case chardev.RouteShadow:
			if !strings.HasPrefix(path, "/") || r.Shadow != v.Root()+path {
				t.Fatalf("%q: shadow %q outside %s", path, r.Shadow, v.Root())
			}
		default:
			t.Fatalf("%q: kind %d", path, r.Kind)
		}
	})
}
