package testbed_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/internal/testenv"
)

// examples/gotest is a module of its own that uses the testbed as a
// project outside neuronfs does; its tests must build offline (its only
// requirements are this module's, through a replace) and pass.
func TestExampleGoModule(t *testing.T) {
	testenv.RequireFUSE(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir, err := filepath.Abs(filepath.Join("..", "examples", "gotest"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "test", "-count=1", "-v", "./...")
	cmd.Dir = dir
	// Offline and outside any workspace: what the module needs is this
	// module and its requirements, already in the module cache.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=readonly", "NEURONFS_REQUIRE_FUSE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in %s: %v\n%s", dir, err, out)
	}
	for _, name := range []string{"TestToolSeesTheHost", "TestToolSeesResetFailure"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}
