package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// When CMD cannot be started, run says which path failed and why, on one
// line, with the shell's status, and logs nothing else.
func TestRunStartFailureNamesCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "true")
	data, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		// Without root the directory is the caller's, as CMD's ids are
		// (rootless.go): only no permissions at all keep CMD out.
		if err := os.Chmod(dir, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"chardev", nil}, {"no-chardev", []string{"--no-chardev"}}} {
		if mode.name == "no-chardev" && !kernelPassthrough(t) {
			t.Run(mode.name, func(t *testing.T) {
				t.Skip(noPassthrough + ": run --no-chardev refuses to start")
			})
			continue
		}
		for _, tc := range []struct {
			name   string
			args   []string
			status int
			stderr string
		}{
			{"unreadable", []string{"--uid=65534", "--gid=65534", "--", bin}, 126, "neuronfs run: " + bin + ": permission denied\n"},
			{"missing", []string{"--", "neuronfs-no-such-command"}, 127, "neuronfs run: neuronfs-no-such-command: command not found\n"},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				args := append(append([]string{"run", "--instance=trn2.3xlarge"}, mode.flags...), tc.args...)
				cmd := neuronfs(t, args...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != tc.status {
					t.Fatalf("run: %v, want exit status %d; stderr:\n%s", err, tc.status, stderr.String())
				}
				if stderr.String() != tc.stderr {
					t.Fatalf("stderr %q, want %q", stderr.String(), tc.stderr)
				}
			})
		}
	}
}
