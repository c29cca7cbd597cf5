package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The attacks of a local user on a state directory that root trusts:
// plant a state file naming root's files, or a link where root writes.

// rootFile makes a file only root may touch, with content, outside any
// state directory: what an attacker would like root to remove or
// overwrite.
func rootFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func survives(t *testing.T, p, content string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != content {
		t.Errorf("%s: %q %v, want it untouched (%q)", p, b, err, content)
	}
}

// plantState writes a state file of a dead daemon (PID 1 with a start
// time that is not its own) into dir, as a local user could if dir were
// theirs.
func plantState(t *testing.T, dir string, mountpoint string, changes ...hostChange) {
	t.Helper()
	b, err := json.Marshal(hostState{PID: 1, Start: "not-init's", Mountpoint: mountpoint, Changes: changes})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hostStateFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A state directory a local user could write to, or owns, is refused,
// whatever its state file says; a missing one is made 0700.
func TestHostStateDirRefused(t *testing.T) {
	testRequireRoot(t)
	fresh := filepath.Join(t.TempDir(), "state")
	d, err := openStateDir(fresh, true)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("a new state directory: %v %v, want mode 0700", st.Mode(), err)
	}

	victim := rootFile(t, "")
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	plantState(t, open, "/nonexistent/1", hostChange{changeFile, victim})
	theirs := t.TempDir()
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	plantState(t, theirs, "/nonexistent/1", hostChange{changeFile, victim})
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(parent, "state")
	if err := os.Mkdir(under, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ name, dir, want string }{
		{"mode 0777", open, "writable by group or others"},
		{"owned by nobody", theirs, "owned by uid 65534"},
		{"under a 0777 parent", under, "its parent " + parent},
	} {
		for _, create := range []bool{true, false} {
			d, err := openStateDir(x.dir, create)
			if err == nil {
				d.Close()
				t.Errorf("%s: accepted", x.name)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, x.want) || !strings.Contains(msg, "only root can write") || strings.Contains(msg, "\n") {
				t.Errorf("%s: %q, want one line with %q", x.name, msg, x.want)
			}
		}
		if err := cleanupHost(x.dir); err == nil {
			t.Errorf("%s: cleanup accepted it", x.name)
		}
	}
	survives(t, victim, "")
}

// A state file naming what host mode never makes — a root-only file
// outside /dev/neuronN, a mount point outside the state directory — is
// refused as a whole by both readers, and nothing it names is removed.
func TestHostStateForeignPathsNotUndone(t *testing.T) {
	testRequireRoot(t)
	empty := rootFile(t, "") // undo removes empty regular files
	full := rootFile(t, "root's")
	for _, x := range []struct {
		name       string
		mountpoint string
		changes    []hostChange
	}{
		{"a file outside /dev", "", []hostChange{{changeFile, empty}}},
		{"a mount point elsewhere", full, nil},
		{"a file beside the nodes", "", []hostChange{{changeFile, "/dev/neuron0"}, {changeFile, "/dev/neuron0/../../" + empty}}},
	} {
		dir := t.TempDir()
		mp := x.mountpoint
		if mp == "" {
			mp = filepath.Join(dir, "1")
		}
		plantState(t, dir, mp, x.changes...)
		d, err := openStateDir(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkHostFree(d); err == nil || !strings.Contains(err.Error(), "refusing to undo") {
			t.Errorf("%s: mount --host's check: %v", x.name, err)
		}
		d.Close()
		if err := cleanupHost(dir); err == nil || !strings.Contains(err.Error(), "refusing to undo") {
			t.Errorf("%s: cleanup: %v", x.name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, hostStateFile)); err != nil {
			t.Errorf("%s: the state file went: %v", x.name, err)
		}
	}
	survives(t, empty, "")
	survives(t, full, "root's")
}

// The state is written to a new file renamed into place: a link planted
// at the temporary name is replaced, not followed, and a state file that
// is a link is not read.
func TestHostStateNoLinksFollowed(t *testing.T) {
	testRequireRoot(t)
	target := rootFile(t, "root's")
	dir := t.TempDir()
	tmp := filepath.Join(dir, hostStateFile+".tmp")
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	d, err := openStateDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st := &hostState{PID: os.Getpid(), Mountpoint: filepath.Join(d.path, "x"), Changes: []hostChange{}, dir: d}
	if err := st.record(changeFile, "/dev/neuron0"); err != nil {
		t.Fatal(err)
	}
	survives(t, target, "root's")
	if fi, err := os.Lstat(filepath.Join(dir, hostStateFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the state file: %v %v, want a regular file", fi, err)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Errorf("the planted link is still there: %v", err)
	}

	// A state file that is a link to root's file.
	if err := os.Remove(filepath.Join(dir, hostStateFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, hostStateFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := loadHostState(d); err == nil {
		t.Error("a state file that is a link was read")
	}
	survives(t, target, "root's")
}

// check accepts exactly what host mode makes.
func TestHostStateCheck(t *testing.T) {
	d := &stateDir{given: "/run/neuronfs", path: "/run/neuronfs"}
	good := hostState{PID: 42, Mountpoint: "/run/neuronfs/42", dir: d, Changes: []hostChange{
		{changeFile, "/dev/neuron0"}, {changeBind, "/dev/neuron0"}, {changeFile, "/dev/neuron15"}, {changeBind, "/dev/neuron15"},
		{changeOverlay, "/sys/class"}, {changeOverlay, "/sys/devices/virtual"}, {changeOverlay, "/sys/module"},
	}}
	if err := good.check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		pid int
		mp  string
		c   hostChange
	}{
		{0, "/run/neuronfs/0", hostChange{changeFile, "/dev/neuron0"}},
		{42, "/run/neuronfs/43", hostChange{changeFile, "/dev/neuron0"}},
		{42, "/etc", hostChange{changeFile, "/dev/neuron0"}},
		{42, "/run/neuronfs/42", hostChange{changeFile, "/etc/shadow"}},
		{42, "/run/neuronfs/42", hostChange{changeFile, "/dev/neuron"}},
		{42, "/run/neuronfs/42", hostChange{changeFile, "/dev/neuron01"}},
		{42, "/run/neuronfs/42", hostChange{changeFile, "/dev/neuron0/x"}},
		{42, "/run/neuronfs/42", hostChange{changeFile, "/dev/neuron_ctl"}},
		{42, "/run/neuronfs/42", hostChange{changeBind, "/dev/sda"}},
		{42, "/run/neuronfs/42", hostChange{changeOverlay, "/tmp"}},
		{42, "/run/neuronfs/42", hostChange{changeOverlay, "/dev/neuron0"}},
		{42, "/run/neuronfs/42", hostChange{"rm", "/dev/neuron0"}},
	} {
		s := hostState{PID: bad.pid, Mountpoint: bad.mp, dir: d, Changes: []hostChange{bad.c}}
		if err := s.check(); err == nil {
			t.Errorf("accepted pid %d, mount point %s, %+v", bad.pid, bad.mp, bad.c)
		}
	}
}
