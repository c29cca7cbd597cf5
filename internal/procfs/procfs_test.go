package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestField(t *testing.T) {
	v, err := Field("/proc/self/status", "Tgid")
	if err != nil || v != strconv.Itoa(os.Getpid()) {
		t.Fatalf("Tgid %q %v, want %d", v, err, os.Getpid())
	}
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("pos:\t0\nflags:\t0100002\nmnt_id:\t9\n"), 0o600)
	if v, err := Field(p, "flags"); err != nil || v != "0100002" {
		t.Fatalf("flags %q %v", v, err)
	}
	if _, err := Field(p, "ino"); err == nil {
		t.Fatal("a missing key was found")
	}
}
