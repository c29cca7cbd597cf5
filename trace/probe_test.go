package trace

import (
	"os"
	"testing"
)

// requireBPF skips without root, unless the suite demands the privileged
// facilities (NEURONFS_REQUIRE_FUSE=1), where a skip would hide a failure.
func requireBPF(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatal("NEURONFS_REQUIRE_FUSE=1 but not root: cannot load eBPF programs")
		}
		t.Skip("needs root to load eBPF programs")
	}
}

func TestProbeLoads(t *testing.T) {
	requireBPF(t)
	p, err := NewProbe(ProbeOptions{Children: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
