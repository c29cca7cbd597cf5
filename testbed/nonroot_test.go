package testbed_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/exitguard"
	"github.com/neuronfs/neuronfs/testbed"
)

// nonRootHelperEnv makes TestNewAsNobodyHelper ask for a testbed.
const nonRootHelperEnv = "NEURONFS_TESTBED_NONROOT_HELPER"

func TestNewAsNobodyHelper(t *testing.T) {
	if os.Getenv(nonRootHelperEnv) != "1" {
		t.Skip("run by TestNewWithoutRootFails")
	}
	testbed.New(t)
	t.Log("got a testbed")
}

// Without root, New fails the test with the line naming what is missing,
// and skips it only when $NEURONFS_SKIP_WITHOUT_HOST=1 asks for that.
func TestNewWithoutRootFails(t *testing.T) {
	testutil.RequireFUSE(t) // root, to run the helper as nobody
	// The test binary, where nobody can run it.
	dir, err := os.MkdirTemp("", "neuronfs-tb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "testbed.test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") && !strings.HasPrefix(kv, "NEURONFS_REQUIRE_FUSE=") &&
			!strings.HasPrefix(kv, testbed.SkipEnv+"=") {
			env = append(env, kv)
		}
	}
	run := func(extra ...string) (string, error) {
		cmd := exec.Command(bin, "-test.run", "^TestNewAsNobodyHelper$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(append(env, nonRootHelperEnv+"=1", "TMPDIR="+dir), extra...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const line = "a testbed needs root"
	out, err := run()
	if err == nil || !strings.Contains(out, "--- FAIL: TestNewAsNobodyHelper") || !strings.Contains(out, line) {
		t.Errorf("New as nobody: %v, want a failure saying %q:\n%s", err, line, out)
	}
	out, err = run(testbed.SkipEnv + "=1")
	if err != nil || !strings.Contains(out, "--- SKIP: TestNewAsNobodyHelper") || !strings.Contains(out, line) {
		t.Errorf("New as nobody, %s=1: %v, want a skip saying %q:\n%s", testbed.SkipEnv, err, line, out)
	}
}

// copyExecutable copies the file at from to a new executable at to.
func copyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
