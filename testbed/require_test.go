package testbed

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recordTB records what requireHost decided instead of ending the test.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Helper()                   {}
func (r *recordTB) Skip(args ...any)          { r.skipped = fmt.Sprint(args...) }
func (r *recordTB) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

// Where no host can start, New fails the test with the line naming what
// is missing; skipping is opted into (the option or $NEURONFS_SKIP_WITHOUT_HOST=1),
// and NEURONFS_REQUIRE_FUSE=1 makes it a failure again.
func TestRequireHostFailsUnlessSkipAsked(t *testing.T) {
	noRoot := hostFacts{euid: 1000, noUserns: "user.max_user_namespaces"}
	noFUSE := hostFacts{fuseErr: errors.New("permission denied")}
	for _, c := range []struct {
		name      string
		facts     hostFacts
		opt       bool
		env       map[string]string
		skip, err string // what the line holds, or ""
	}{
		{"root and /dev/fuse", hostFacts{}, false, nil, "", ""},
		{"no root, user namespaces", hostFacts{euid: 1000}, false, nil, "", ""},
		{"no root", noRoot, false, nil, "", "a testbed without root needs an unprivileged user namespace"},
		{"no /dev/fuse", noFUSE, false, nil, "", "a testbed needs read-write access to /dev/fuse: permission denied"},
		{"no root, option", noRoot, true, nil, "a testbed without root needs an unprivileged user namespace", ""},
		{"no root, env", noRoot, false, map[string]string{SkipEnv: "1"}, "a testbed without root needs an unprivileged user namespace", ""},
		{"no root, option, required", noRoot, true, map[string]string{requireEnv: "1"}, "", "a testbed without root needs an unprivileged user namespace"},
		{"no root, env, required", noRoot, false, map[string]string{SkipEnv: "1", requireEnv: "1"}, "", "a testbed without root needs an unprivileged user namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recordTB{TB: t}
			requireHost(r, c.facts, c.opt, func(k string) string { return c.env[k] })
			if (c.skip == "") != (r.skipped == "") || !strings.Contains(r.skipped, c.skip) {
				t.Errorf("skipped with %q, want %q", r.skipped, c.skip)
			}
			if (c.err == "") != (r.failed == "") || !strings.Contains(r.failed, c.err) {
				t.Errorf("failed with %q, want %q", r.failed, c.err)
			}
			if strings.Contains(r.failed+r.skipped, "\n") {
				t.Errorf("more than one line: %q", r.failed+r.skipped)
			}
		})
	}
}
