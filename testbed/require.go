package testbed

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// SkipEnv, set to 1, makes New skip a test where no host can start,
// instead of failing it; the pytest plugin's neuron_host reads it too.
const SkipEnv = "NEURONFS_SKIP_WITHOUT_HOST"

// requireEnv, set to 1 (as CI sets it), makes a missing host a failure
// whatever the test opted into.
const requireEnv = "NEURONFS_REQUIRE_FUSE"

// SkipWithoutHost makes New skip the test, rather than fail it, where no
// host starts (not even the filter view: a kernel without seccomp user
// notification): for suites that also run where device tests cannot. $NEURONFS_SKIP_WITHOUT_HOST=1 does the same
// for every test; NEURONFS_REQUIRE_FUSE=1 overrides both.
func SkipWithoutHost() Option {
	return func(c *config) error { c.skipWithoutHost = true; return nil }
}

// hostFacts are what a mounted host needs from the machine, as New finds
// them; without them New serves the filter view.
type hostFacts struct {
	euid     int
	fuseErr  error  // of read-write access to /dev/fuse
	noUserns string // the sysctl that forbids unprivileged user namespaces, or ""
}

// usernsOff are the sysctls that, at 0, forbid an unprivileged user
// namespace, which a testbed without root mounts from.
var usernsOff = []struct{ name, file string }{
	{"user.max_user_namespaces", "/proc/sys/user/max_user_namespaces"},
	{"kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone"},
}

func readHostFacts() hostFacts {
	f := hostFacts{euid: os.Geteuid(), fuseErr: unix.Access("/dev/fuse", unix.R_OK|unix.W_OK)}
	for _, s := range usernsOff {
		if b, err := os.ReadFile(s.file); err == nil && strings.TrimSpace(string(b)) == "0" {
			f.noUserns = s.name
			break
		}
	}
	return f
}

// missing names, in one line, what keeps the host from being mounted
// here, or is "".
func (f hostFacts) missing() string {
	if f.fuseErr != nil {
		return "a testbed needs read-write access to /dev/fuse: " + f.fuseErr.Error()
	}
	if f.euid != 0 && f.noUserns != "" {
		return "a testbed without root needs an unprivileged user namespace, which sysctl " + f.noUserns + "=0 forbids (raise it, or run the test as root)"
	}
	return ""
}

// requireHost fails the test with why (one line), or skips it where the
// test or the environment opted into skipping.
func requireHost(t testing.TB, why string, skipOpt bool, getenv func(string) string) {
	t.Helper()
	if getenv(requireEnv) != "1" && (skipOpt || getenv(SkipEnv) == "1") {
		t.Skip(why)
		return
	}
	t.Fatalf("%s (to skip instead: testbed.SkipWithoutHost() or %s=1)", why, SkipEnv)
}
