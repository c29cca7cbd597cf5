package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A MOUNTPOINT that is missing or not a directory is one plain line, not
// the mount(2) error through every layer.
func TestMountErrorsAreOneLine(t *testing.T) {
	testRequireRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ mnt, want string }{
		{filepath.Join(dir, "nosuch"), filepath.Join(dir, "nosuch") + ": the directory does not exist"},
		{file, file + ": not a directory"},
	} {
		_, stderr, status := cliCmd(t, neuronfs(t, "mount", "--instance=inf2.xlarge", c.mnt))
		if want := "neuronfs mount: " + c.want + "\n"; status != 1 || stderr != want {
			t.Errorf("mount %s: status %d, stderr %q; want 1 and %q", c.mnt, status, stderr, want)
		}
	}
}

// A bare mount says in one line, on stdout, where the devices are and
// that unmodified programs need run or host mode.
func TestMountSaysWhere(t *testing.T) {
	dir := t.TempDir()
	cmd := neuronfs(t, "mount", "--instance=inf2.xlarge", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGTERM)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "neuronfs: 1 device served under "+dir+" ") ||
		!strings.Contains(line, "'neuronfs run'") || !strings.Contains(line, "'neuronfs mount --host'") {
		t.Fatalf("mount printed %q (%v)", line, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dev/neuron0")); err != nil {
		t.Fatalf("after the line: %v", err)
	}
}
