package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/trace"
)

// victim is a root-only file with content, as /etc/shadow would be.
func victim(t *testing.T) (path string, content []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "shadow")
	content = []byte("root:secret:20000:0:99999:7:::\n")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// untouched fails the test if path lost its content or mode.
func untouched(t *testing.T, path string, content []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("%s now holds %q (%v), want %q", path, got, err, content)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v", path, err, st.Mode())
	}
}

// replayOne issues one record in a fresh replay state and closes what it
// opened.
func replayOne(t *testing.T, s *state, r trace.Record) Result {
	t.Helper()
	res, err := s.call(&r)
	if err != nil {
		t.Fatalf("seq %d: %v", r.Seq, err)
	}
	return res
}

func closeAll(s *state) {
	for k, fd := range s.fds {
		unix.Close(fd)
		delete(s.fds, k)
	}
}

// A trace names the files replay opens, and traces come with bug
// reports: one that opens a root-only file with O_TRUNC, creates a file,
// or reaches a file through a name that starts like a device node's, is
// skipped with the reason, and the files are as they were.
func TestReplayOpensOnlyDeviceNodes(t *testing.T) {
	path, content := victim(t)
	created := filepath.Join(filepath.Dir(path), "created")
	const evil = unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND
	// Nodes in a directory of the test's own, so that a replay that
	// opens what it should not creates nothing outside it.
	nodes := fakeNodes(t, 2)
	s := newState(&trace.Trace{}, Options{nodes: nodes})
	defer closeAll(s)
	dev := nodes.dir
	for i, p := range []string{
		path, created,
		dev + "/neuron0/../.." + path, dev + "/../" + path, dev + "//neuron0", dev + "/neuron00",
		dev + "/neuron", dev + "/neuron-1", dev + "/neuron0 ", dev + "/neuron99999999999999999999", dev[1:] + "/neuron0",
		dev + "/neuron1\n\x1b[2J",
	} {
		res := replayOne(t, s, trace.Record{Seq: i + 1, Op: trace.OpOpen, TGID: 7, TID: 7, FD: 3 + i, Path: p, Flags: evil, Ret: int64(3 + i)})
		if res.Status != Skipped || len(res.NotCompared) != 1 || !strings.HasPrefix(res.NotCompared[0], "not an emulated device node") {
			t.Errorf("open %q: %+v, want skipped as not a device node", p, res)
		}
		if strings.ContainsAny(res.Call, "\n\x1b") {
			t.Errorf("open %q: the report's call %q carries control characters", p, res.Call)
		}
	}
	if len(s.fds) != 0 {
		t.Errorf("replay holds fds %v", s.fds)
	}
	untouched(t, path, content)
	if _, err := os.Lstat(created); !os.IsNotExist(err) {
		t.Errorf("replay created %s: %v", created, err)
	}
	if ents, err := os.ReadDir(dev); err != nil || len(ents) != 2 {
		t.Errorf("the nodes' directory holds %v (%v), want neuron0 and neuron1 only", ents, err)
	}
}

// The nodes replay opens are /dev/neuronN, N in decimal as the driver
// names them, and nothing that merely starts or ends like one.
func TestDevicePaths(t *testing.T) {
	p := defaultNodes()
	for path, want := range map[string]int{
		"/dev/neuron0": 0, "/dev/neuron7": 7, "/dev/neuron15": 15, "/dev/neuron127": 127,
		"/dev/neuron": -1, "/dev/neuron00": -1, "/dev/neuron01": -1, "/dev/neuron+1": -1, "/dev/neuron-0": -1,
		"/dev//neuron0": -1, "/dev/./neuron0": -1, "/dev/neuron0/": -1, "/dev/neuron0/..": -1, "dev/neuron0": -1,
		"/dev/neuron0\x00": -1, "/dev/neuron1e3": -1, "/dev/neuron0x1": -1, "/dev/neuron65536": -1,
		"/tmp/dev/neuron0": -1, "/sys/class/neuron_device/neuron0": -1, "": -1,
	} {
		n, ok := p.minor(path)
		if ok != (want >= 0) || ok && n != want {
			t.Errorf("minor(%q) = %d, %v; want %d", path, n, ok, want)
		}
	}
}

// A name of the nodes' form is opened without following a symlink and
// without the recorded O_TRUNC or O_CREAT, and what was opened must be an
// emulated node: a symlink to a root-only file, or a plain file in its
// place, is skipped and stays as it was.
func TestReplayChecksWhatItOpened(t *testing.T) {
	path, content := victim(t)
	dir := t.TempDir()
	if err := os.Symlink(path, filepath.Join(dir, "neuron0")); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "neuron1")
	if err := os.WriteFile(plain, content, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newState(&trace.Trace{}, Options{nodes: &nodePolicy{dir: dir, open: openNode, verify: verifyNode}})
	defer closeAll(s)
	for i, c := range []struct{ path, why string }{
		{dir + "/neuron0", "a symlink"},
		{plain, "not an emulated device node: a regular file on filesystem"},
		{dir + "/neuron2", ""}, // absent: the errno is compared
	} {
		r := trace.Record{Seq: i + 1, Op: trace.OpOpen, TGID: 7, TID: 7, FD: 3 + i, Path: c.path,
			Flags: unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC, Ret: int64(3 + i)}
		res := replayOne(t, s, r)
		switch {
		case c.why == "" && (res.Status != Differ || !strings.Contains(strings.Join(res.Diffs, ""), "ENOENT")):
			t.Errorf("open %s: %+v, want ENOENT (nothing created)", c.path, res)
		case c.why != "" && (res.Status != Skipped || !strings.HasPrefix(strings.Join(res.NotCompared, ""), c.why)):
			t.Errorf("open %s: %+v, want skipped: %s", c.path, res, c.why)
		}
	}
	if len(s.fds) != 0 {
		t.Errorf("replay holds fds %v", s.fds)
	}
	untouched(t, path, content)
	untouched(t, plain, content)
	if _, err := os.Lstat(dir + "/neuron2"); !os.IsNotExist(err) {
		t.Errorf("replay created neuron2: %v", err)
	}
}

// A node's open passes the access mode and O_NONBLOCK, never O_CREAT,
// O_TRUNC or O_APPEND, and says what it dropped.
func TestOpenFlags(t *testing.T) {
	for _, c := range []struct{ in, flags, dropped uint64 }{
		{unix.O_RDWR | unix.O_CLOEXEC, unix.O_RDWR, 0},
		{unix.O_RDONLY | unix.O_NONBLOCK, unix.O_NONBLOCK, 0},
		{unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND | unix.O_EXCL, unix.O_WRONLY, unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND | unix.O_EXCL},
		{unix.O_RDWR | unix.O_TMPFILE | unix.O_PATH | unix.O_DIRECT | unix.O_SYNC, unix.O_RDWR, unix.O_TMPFILE | unix.O_PATH | unix.O_DIRECT | unix.O_SYNC},
	} {
		flags, dropped := openFlags(c.in)
		if want := int(c.flags) | unix.O_CLOEXEC | unix.O_NOFOLLOW; flags != want || dropped != c.dropped {
			t.Errorf("openFlags(%#x) = %#x, dropped %#x; want %#x, dropped %#x", c.in, flags, dropped, want, c.dropped)
		}
	}
}

// The neuron major is the one /proc/devices lists among the character
// devices, not a block device of the name.
func TestNeuronMajor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "devices")
	text := "Character devices:\n  1 mem\n 10 misc\n234 neuron\n\nBlock devices:\n  7 loop\n 99 neuron\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := neuronMajor(p); err != nil || m != 234 {
		t.Errorf("major %d, %v; want 234", m, err)
	}
	if err := os.WriteFile(p, []byte("Character devices:\n  1 mem\n\nBlock devices:\n 99 neuron\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := neuronMajor(p); err == nil {
		t.Errorf("a block device's major %d taken", m)
	}
}

// fakeNodes is a directory of n plain files standing in for device nodes,
// accepted as such: for tests of what replay does with what it opened.
func fakeNodes(t *testing.T, n int) *nodePolicy {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "neuron"+strconv.Itoa(i)), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return &nodePolicy{dir: dir, open: openNode, verify: func(fd, minor int) error { return nil }}
}
