package main

import (
	"path/filepath"
	"testing"
)

// run and trace word a CMD that is not there, or cannot be executed, the
// same way, as a shell does, with the shell's status.
func TestRunAndTraceWordNotFoundAlike(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cmd, want string
		status    int
	}{
		{"neuronfs-no-such-command", "neuronfs-no-such-command: command not found", 127},
		{dir, dir + ": is a directory", 126},
	} {
		for _, args := range [][]string{
			{"run", "--instance=inf2.xlarge", "--", c.cmd},
			{"trace", "-o", filepath.Join(dir, "t.jsonl"), "--", c.cmd},
		} {
			_, stderr, status := cliCmd(t, neuronfs(t, args...))
			if want := "neuronfs " + args[0] + ": " + c.want + "\n"; status != c.status || stderr != want {
				t.Errorf("%s of %s: status %d, stderr %q; want %d and %q", args[0], c.cmd, status, stderr, c.status, want)
			}
		}
	}
}
