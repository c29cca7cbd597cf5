// Package testenv decides whether a test can use FUSE here. It imports
// nothing of neuronfs, so tests inside any package can use it.
package testenv

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireFUSE skips the test without root and /dev/fuse, or fails it when
// NEURONFS_REQUIRE_FUSE=1 (as CI sets it).
func RequireFUSE(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root"
	} else if err := unix.Access("/dev/fuse", unix.R_OK|unix.W_OK); err != nil {
		why = "needs /dev/fuse: " + err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("NEURONFS_REQUIRE_FUSE=1 but this test %s", why)
	}
	t.Skip(why)
}

// QuickRaceExit makes the processes a test binary starts from itself
// (helpers, daemons) skip the race detector's one-second sleep at exit:
// tests start hundreds of them. A GORACE the caller set is kept.
func QuickRaceExit() {
	g := os.Getenv("GORACE")
	if strings.Contains(g, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
}
