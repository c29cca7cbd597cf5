package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/ioctl"
)

// cli runs the command and returns its stdout, stderr and status.
func cli(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	return cliCmd(t, exec.Command(os.Args[0], args...))
}

func cliCmd(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, status int) {
	t.Helper()
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// inProcess runs dispatch with standard output and error captured: the
// commands below return before doing anything, and a subprocess of the
// race-instrumented binary costs half a second each.
func inProcess(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	dir := t.TempDir()
	o, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = o, e
	status = dispatch(args)
	os.Stdout, os.Stderr = savedOut, savedErr
	o.Close()
	e.Close()
	ob, _ := os.ReadFile(o.Name())
	eb, _ := os.ReadFile(e.Name())
	return string(ob), string(eb), status
}

func TestHelpVersionAndExitCodes(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		out    string // in stdout
		errOut string // in stderr
	}{
		{nil, 2, "", "Usage:"},
		{[]string{"help"}, 0, "neuronfs top", ""},
		{[]string{"--help"}, 0, "Exit status", ""},
		{[]string{"help", "top"}, 0, "-interval", ""},
		{[]string{"top", "-h"}, 0, "-interval", ""},
		{[]string{"help", "mount"}, 0, "-log-format", ""},
		{[]string{"mount", "--help"}, 0, "-state-dir", ""},
		{[]string{"help", "cleanup"}, 0, "-state-dir", ""},
		{[]string{"help", "nosuch"}, 2, "", "unknown command"},
		{[]string{"nosuch"}, 2, "", "unknown command"},
		{[]string{"help", "__reap"}, 2, "", "unknown command"},
		{[]string{"version"}, 0, ioctl.DefaultVersion, ""},
		{[]string{"--version"}, 0, "neuronfs ", ""},
		{[]string{"version", "extra"}, 2, "", "takes no arguments"},
		{[]string{"mount", "--nosuch", "x"}, 2, "", "unknown flag --nosuch"},
		{[]string{"mount", "--log-format=xml", "x"}, 2, "", "--log-format \"xml\": want text or json"},
		{[]string{"mount"}, 2, "", "want one MOUNTPOINT"},
		{[]string{"mount", "--host", "x"}, 2, "", "no MOUNTPOINT"},
		{[]string{"run", "--log-format=xml", "--", "true"}, 2, "", "--log-format \"xml\""},
		{[]string{"top", "--interval=0"}, 2, "", "--interval 0s: want a positive duration"},
		{[]string{"top", "extra"}, 2, "", "unexpected argument"},
		{[]string{"cleanup", "extra"}, 2, "", "unexpected argument"},
	} {
		out, errOut, status := inProcess(t, c.args...)
		if status != c.status || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.errOut) {
			t.Errorf("neuronfs %q: status %d, stdout %q, stderr %q; want %d, %q, %q", c.args, status, out, errOut, c.status, c.out, c.errOut)
		}
	}
	// Through main and os.Exit too.
	if _, errOut, status := cli(t); status != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("neuronfs without arguments: status %d, stderr %q", status, errOut)
	}
	out, _, status := cli(t, "--version")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); status != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "neuronfs (devel)") && !strings.HasPrefix(lines[0], "neuronfs v") {
		t.Errorf("--version: status %d, output %q", status, out)
	}
}

// A precondition that fails is one line on stderr and status 1.
func failsWithOneLine(t *testing.T, what, stderr string, status int, want string) {
	t.Helper()
	if status != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "level=") {
		t.Fatalf("%s: status %d, stderr %q; want 1 and one line with %q", what, status, stderr, want)
	}
}

// mount, host mode and cleanup need root; run does not (rootless_test.go).
func TestNotRootIsOneLine(t *testing.T) {
	if os.Geteuid() != 0 {
		for _, args := range [][]string{{"mount", t.TempDir()}, {"mount", "--host"}, {"cleanup"}} {
			_, errOut, status := cli(t, args...)
			failsWithOneLine(t, strings.Join(args, " ")+" as non-root", errOut, status, "needs root")
		}
		return
	}
	// Run a copy of the test binary as nobody.
	bin := binaryCopy(t, "neuronfs")
	dir := filepath.Dir(bin)
	for _, args := range [][]string{{"mount", dir}, {"mount", "--host"}, {"cleanup"}} {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		_, errOut, status := cliCmd(t, cmd)
		failsWithOneLine(t, strings.Join(args, " ")+" as nobody", errOut, status, "needs root")
	}
}

func TestMissingFUSEIsOneLine(t *testing.T) {
	testRequireRoot(t)
	// A private mount namespace where /dev/fuse is not the FUSE device.
	// run names the mount: by default it takes the filter host view
	// there (TestRunContainer).
	for _, args := range []string{"mount " + t.TempDir(), "run --host-view=mount -- true", "mount --host --state-dir " + t.TempDir()} {
		cmd := exec.Command("sh", "-c", `mount --bind /dev/null /dev/fuse && exec "$0" `+args, os.Args[0])
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		_, errOut, status := cliCmd(t, cmd)
		failsWithOneLine(t, args+" without /dev/fuse", errOut, status, "/dev/fuse is missing")
	}
}

func testRequireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatal("NEURONFS_REQUIRE_FUSE=1 but this test needs root")
		}
		t.Skip("needs root")
	}
}

// --log-format json makes every log line a JSON object.
func TestLogFormatJSON(t *testing.T) {
	dir := t.TempDir()
	cmd := neuronfs(t, "mount", "--instance=inf2.xlarge", "--log-level=info", "--log-format=json", dir)
	cmd.Stderr = nil
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mount", func() bool {
		_, err := os.Stat(filepath.Join(dir, "sys/module/neuron/version"))
		return err == nil
	})
	cmd.Process.Signal(syscall.SIGTERM)
	sc := bufio.NewScanner(stderr)
	var msgs []string
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if rec["level"] == nil || rec["time"] == nil {
			t.Fatalf("log record without level or time: %v", rec)
		}
		msgs = append(msgs, rec["msg"].(string))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 2 || msgs[0] != "mounted" || msgs[len(msgs)-1] != "unmounting" {
		t.Fatalf("messages %q, want mounted ... unmounting", msgs)
	}
}

// A mount that fails its mmap self-test names FUSE passthrough.
func TestMountErrorNamesPassthrough(t *testing.T) {
	err := mountError(fmt.Errorf("fs: /x: self-test mmap: %w", fs.ErrMmapNotCoherent))
	if !strings.Contains(err.Error(), "FUSE passthrough is unavailable") || !strings.Contains(err.Error(), "--degraded-mmap") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("passthrough error reads %q", err)
	}
	other := errors.New("fs: mount /x: permission denied")
	if mountError(other) != other {
		t.Fatal("other mount errors are changed")
	}
}
