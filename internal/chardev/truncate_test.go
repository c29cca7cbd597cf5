package chardev

import (
	"os"
	"path/filepath"
	"testing"
)

// A path whose links lead into the caller's own /proc directory is
// rewritten up to there, where resolve takes over; links inside /proc
// and paths without links are left alone.
func TestExpandSelfLinks(t *testing.T) {
	dir := t.TempDir()
	for name, target := range map[string]string{
		"self":     "/proc/self/fd/7",
		"devfd":    "/dev/fd/7",
		"relative": "self",
		"subdir":   "/proc/self",
		"plain":    "/etc/hostname",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pid := uint32(os.Getpid())
	for _, c := range []struct{ in, want string }{
		{dir + "/self", "/proc/self/fd/7"},
		{dir + "/devfd", "/dev/fd/7"},
		{dir + "/relative", "/proc/self/fd/7"},
		{dir + "/subdir/fd/9", "/proc/self/fd/9"},
		{dir + "/plain", "/etc/hostname"},
		{dir + "/file", dir + "/file"},
		{"/proc/self/fd/7", "/proc/self/fd/7"},
		{"/proc/1/root", "/proc/1/root"},
	} {
		if got := string(expandSelfLinks(pid, []byte(c.in))); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	// Relative to the working directory.
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	if got := string(expandSelfLinks(pid, []byte("relative"))); got != "/proc/self/fd/7" {
		t.Errorf("relative: %s, want /proc/self/fd/7", got)
	}
}
