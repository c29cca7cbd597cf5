package main

import (
	"os"
	"testing"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// requireRun skips a test of `neuronfs run` where run cannot work, or
// fails it when NEURONFS_REQUIRE_FUSE=1 (as CI sets it). As root that is
// testutil.RequireFUSE; without root run works rootless (rootless.go), so
// what it needs is what run itself checks first: unprivileged user
// namespaces allowed and /dev/fuse usable by the caller.
func requireRun(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		testutil.RequireFUSE(t)
		return
	}
	err := rootlessPreflight(os.Getuid())
	if err == nil {
		return
	}
	// Where nothing else works (a container), run's filter host view
	// does: it needs nothing but seccomp.
	if v, _ := hostViewFlag(hostViewAuto).resolve(); v == hostViewFilter {
		return
	}
	if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("NEURONFS_REQUIRE_FUSE=1 but run without root cannot work here: %v", err)
	}
	t.Skipf("run without root cannot work here: %v", err)
}
