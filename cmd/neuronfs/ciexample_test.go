package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/internal/exitguard"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// lookOrFail finds a tool the test cannot do without: skip with a line
// naming it, or fail where the suite must run everything.
func lookOrFail(t *testing.T, bin, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err == nil {
		return p
	}
	if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("%s (%s) is needed for this test: %v", bin, pkg, err)
	}
	t.Skipf("no %s (%s): %v", bin, pkg, err)
	return ""
}

// The CI recipes of docs/testing.md call scripts/ci-example.sh; here it
// runs as a CI job would, on a fresh clone of this repository's HEAD:
// it builds neuronfs, runs examples/gotest's testbed tests and
// examples/pytest inside `neuronfs run`, and must leave the clone as
// cloned. The Go proxy is off: what it builds comes from the module cache.
func TestCIExampleScript(t *testing.T) {
	testenv.RequireFUSE(t)
	gitBin := lookOrFail(t, "git", "git")
	pytestPython(t) // the script finds it the same way
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	top, err := exec.Command(gitBin, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		// A source tree without its history (an unpacked archive) has
		// nothing to clone.
		why := fmt.Sprintf("not a git checkout (%s: %v): nothing to clone", mustGetwd(t), err)
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	clone := filepath.Join(t.TempDir(), "neuronfs")
	if out, err := exec.Command(gitBin, "clone", "-q", "--no-hardlinks", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}

	// The driver's budgets are for one call; a build and two suites on a
	// busy machine get the test's own deadline.
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, filepath.Join(clone, "scripts", "ci-example.sh"))
	cmd.Dir = clone
	var env []string
	for _, kv := range os.Environ() {
		// The script's processes guard themselves; this binary's guard
		// takes the script itself.
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOPROXY=off", "GOFLAGS=-mod=readonly")
	out, err := guardedOutput(t, cmd)
	if err != nil {
		t.Fatalf("scripts/ci-example.sh on a fresh clone: %v\n%s", err, out)
	}
	for _, want := range []string{"ok  \texample.com/neuronfs-gotest", "2 passed", "ci-example: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	st, err := exec.Command(gitBin, "-C", clone, "status", "--porcelain", "--ignored").Output()
	if err != nil || len(st) != 0 {
		t.Errorf("the script left files in the clone (%v):\n%s", err, st)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
