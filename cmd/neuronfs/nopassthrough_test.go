package main

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/fs"
)

// Without FUSE passthrough (Linux < 6.9, or switched off here with
// NEURONFS_NO_PASSTHROUGH=1) mount refuses to start, in one line naming
// passthrough and --degraded-mmap, and leaves nothing mounted; with
// --degraded-mmap it mounts and unmounts on SIGTERM.
func TestMountWithoutPassthrough(t *testing.T) {
	dir := t.TempDir()
	cmd := neuronfs(t, "mount", "--instance=inf2.xlarge", dir)
	cmd.Env = append(cmd.Env, fs.NoPassthroughEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// A mount that starts after all serves until signalled.
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Signal(syscall.SIGTERM) })
	err := cmd.Run()
	timer.Stop()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("mount without passthrough: %v, want a failure; stderr %q", err, stderr.String())
	}
	errOut := stderr.String()
	failsWithOneLine(t, "mount without passthrough", errOut, ee.ExitCode(), "FUSE passthrough is unavailable")
	if !strings.Contains(errOut, "--degraded-mmap") {
		t.Fatalf("mount without passthrough: %q names no --degraded-mmap", errOut)
	}
	if isMounted(t, dir) {
		t.Fatal("the refused mount is left mounted")
	}

	cmd = neuronfs(t, "mount", "--instance=inf2.xlarge", "--degraded-mmap", dir)
	cmd.Env = append(cmd.Env, fs.NoPassthroughEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitMounted(t, cmd, dir)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mount --degraded-mmap after SIGTERM: %v", err)
	}
	if isMounted(t, dir) {
		t.Fatal("still mounted after SIGTERM")
	}
}
