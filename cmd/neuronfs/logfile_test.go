package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badFaults writes a fault list the daemon refuses, which it logs as a
// warning; the write's own error is hidden, so CMD itself prints nothing
// on stderr.
const badFaults = `{ echo bogus > "$NEURONFS_CONTROL/faults"; } 2>/dev/null; echo ok`

// runLogged runs CMD under run with env added and returns run's stdout
// and stderr.
func runLogged(t *testing.T, env []string, args ...string) (string, string) {
	t.Helper()
	cmd := neuronfs(t, append([]string{"run", "--instance=inf2.xlarge", "--uid=0", "--gid=0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("run %q: %v, stderr %q", args, err, e.String())
	}
	return o.String(), e.String()
}

// captured runs f with standard error captured.
func captured(t *testing.T, f func()) string {
	t.Helper()
	e, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = e
	f()
	os.Stderr = saved
	e.Close()
	b, _ := os.ReadFile(e.Name())
	return string(b)
}

// A warning of run's daemon goes to the log file, not into CMD's
// stderr; run names the file in one line when CMD has ended.
func TestLogFileKeepsCMDStreamsClean(t *testing.T) {
	file := filepath.Join(t.TempDir(), "daemon.log")
	stdout, stderr := runLogged(t, nil, "--log-file="+file, "--", "sh", "-c", badFaults)
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), `level=warning msg="faults: bad request"`) {
		t.Fatalf("log file: %v, %q", err, b)
	}
	want := "neuronfs run: the daemon logged warnings or errors: see " + file + "\n"
	if stdout != "ok\n" || stderr != want {
		t.Fatalf("stdout %q, stderr %q; want ok and %q", stdout, stderr, want)
	}
}

// --debug-fuse's request lines follow the log into its file, and run
// names the file, which holds more than warnings, as asked.
func TestLogFileDebugFUSE(t *testing.T) {
	file := filepath.Join(t.TempDir(), "daemon.log")
	stdout, stderr := runLogged(t, nil, "--debug-fuse", "--log-file="+file, "--", "cat", "/sys/module/neuron/version")
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "LOOKUP") {
		t.Fatalf("log file: %v, %.500q", err, b)
	}
	if want := "neuronfs run: the daemon's log is in " + file + "\n"; stdout != "2.25.4.0\n" || stderr != want {
		t.Fatalf("stdout %q, stderr %q; want the version and %q", stdout, stderr, want)
	}
}

// By default the file is the run's own, in the user's runtime directory,
// and made (with its directory, 0700) only when something is logged.
func TestLogFileDefault(t *testing.T) {
	rt := t.TempDir()
	env := []string{"XDG_RUNTIME_DIR=" + rt}
	if stdout, stderr := runLogged(t, env, "--", "true"); stdout != "" || stderr != "" {
		t.Fatalf("a quiet run printed %q, %q", stdout, stderr)
	}
	if _, err := os.Lstat(filepath.Join(rt, "neuronfs")); !os.IsNotExist(err) {
		t.Fatalf("a quiet run left its log directory: %v", err)
	}
	_, stderr := runLogged(t, env, "--", "sh", "-c", badFaults)
	path, ok := strings.CutPrefix(strings.TrimSuffix(stderr, "\n"), "neuronfs run: the daemon logged warnings or errors: see ")
	if !ok || filepath.Dir(path) != filepath.Join(rt, "neuronfs") || !strings.HasPrefix(filepath.Base(path), "run-") {
		t.Fatalf("stderr %q: want one line naming a run-PID.log under %s/neuronfs", stderr, rt)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "faults: bad request") {
		t.Fatalf("%s: %v, %q", path, err, b)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the log directory: %v, %v; want mode 0700", st.Mode(), err)
	}
}

// report counts only this run's records, at warning or above (or any,
// when a lower level was asked for), in either format.
func TestLogFileReport(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		old, now string
		always   bool
		want     bool
	}{
		{"", "", false, false},
		{"", "time=x level=info msg=mounted\n", false, false},
		{"", "time=x level=info msg=mounted\n", true, true},
		{"", "time=x level=warning msg=\"faults: bad request\"\n", false, true},
		{"", `{"level":"error","msg":"x"}` + "\n", false, true},
		{"time=x level=error msg=old\n", "time=x level=info msg=new\n", false, false},
		{"", "time=x level=info msg=\"level=warning in a message\"\n", false, false},
	} {
		path := filepath.Join(dir, "log")
		os.WriteFile(path, []byte(c.old), 0o600)
		l, err := runLogFile(path, map[bool]string{true: "debug", false: "warning"}[c.always], false)
		if err != nil {
			t.Fatal(err)
		}
		if c.now != "" {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(c.now)
			f.Close()
		}
		stderr := captured(t, l.report)
		if got := strings.Contains(stderr, path); got != c.want || strings.Count(stderr, "\n") > 1 {
			t.Errorf("old %q, new %q, always %v: reported %q", c.old, c.now, c.always, stderr)
		}
	}
}

// The default log directory is refused when it is a link or not the
// caller's alone, and the daemon follows no link to its file.
func TestLogFileRefusesLinks(t *testing.T) {
	rt, elsewhere := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	if err := os.Symlink(elsewhere, filepath.Join(rt, "neuronfs")); err != nil {
		t.Fatal(err)
	}
	if _, err := runLogFile("", "warning", false); err == nil || !strings.Contains(err.Error(), "the log directory") {
		t.Errorf("a linked log directory: %v", err)
	}
	if f, err := openLog(filepath.Join(rt, "neuronfs", "run-1.log")); err == nil {
		f.Close()
		t.Errorf("openLog followed a linked directory")
	}
	os.Symlink(filepath.Join(elsewhere, "target"), filepath.Join(elsewhere, "run-2.log"))
	if f, err := openLog(filepath.Join(elsewhere, "run-2.log")); err == nil {
		f.Close()
		t.Errorf("openLog followed a linked file")
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "target")); !os.IsNotExist(err) {
		t.Errorf("a file was made through a link: %v", err)
	}
	os.Remove(filepath.Join(rt, "neuronfs"))
	os.Mkdir(filepath.Join(rt, "neuronfs"), 0o777)
	os.Chmod(filepath.Join(rt, "neuronfs"), 0o777)
	if _, err := runLogFile("", "warning", false); err == nil || !strings.Contains(err.Error(), "want a directory only uid") {
		t.Errorf("a log directory writable by others: %v", err)
	}
}
