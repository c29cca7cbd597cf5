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

// missing names, in one line, what keeps a host from being mounted (New
// then serves the filter view).
func TestMissingNamesWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		name  string
		facts hostFacts
		want  string // what the line holds, or ""
	}{
		{"root and /dev/fuse", hostFacts{}, ""},
		{"no root, user namespaces", hostFacts{euid: 1000}, ""},
		{"no root", hostFacts{euid: 1000, noUserns: "user.max_user_namespaces"}, "a testbed without root needs an unprivileged user namespace, which sysctl user.max_user_namespaces=0 forbids"},
		{"no /dev/fuse", hostFacts{fuseErr: errors.New("permission denied")}, "a testbed needs read-write access to /dev/fuse: permission denied"},
	} {
		got := c.facts.missing()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) || strings.Contains(got, "\n") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// Where no host starts, New fails the test with the line saying why;
// skipping is opted into (the option or $NEURONFS_SKIP_WITHOUT_HOST=1),
// and NEURONFS_REQUIRE_FUSE=1 makes it a failure again.
func TestRequireHostFailsUnlessSkipAsked(t *testing.T) {
	const why = "testbed: seccomp user notification: function not implemented"
	for _, c := range []struct {
		name    string
		opt     bool
		env     map[string]string
		skipped bool
	}{
		{"default", false, nil, false},
		{"option", true, nil, true},
		{"env", false, map[string]string{SkipEnv: "1"}, true},
		{"option, required", true, map[string]string{requireEnv: "1"}, false},
		{"env, required", false, map[string]string{SkipEnv: "1", requireEnv: "1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recordTB{TB: t}
			requireHost(r, why, c.opt, func(k string) string { return c.env[k] })
			got := r.failed
			if c.skipped {
				got = r.skipped
			}
			if !strings.HasPrefix(got, why) || r.failed != "" && r.skipped != "" {
				t.Errorf("skipped with %q, failed with %q, want the line in one of them (skipped: %v)", r.skipped, r.failed, c.skipped)
			}
			if strings.Contains(r.failed+r.skipped, "\n") {
				t.Errorf("more than one line: %q", r.failed+r.skipped)
			}
		})
	}
}
