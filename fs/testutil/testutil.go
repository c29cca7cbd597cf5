// Package testutil holds helpers shared by the real-mount tests.
package testutil

import (
	"testing"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// RequireFUSE skips a test that needs root and /dev/fuse when they are
// missing, unless NEURONFS_REQUIRE_FUSE=1 (as in CI), where it fails.
func RequireFUSE(t testing.TB) {
	t.Helper()
	testenv.RequireFUSE(t)
}

// Mount mounts a fresh emulated host of the given instance type under a
// temporary directory and unmounts it when the test ends.
func Mount(t testing.TB, instance string) (string, *device.System) {
	t.Helper()
	return MountConfig(t, device.Config{Instance: instance})
}

// MountConfig is Mount with a full configuration.
func MountConfig(t testing.TB, cfg device.Config) (string, *device.System) {
	t.Helper()
	d := StartDaemon(t, cfg)
	return d.Dir, d.Sys
}
