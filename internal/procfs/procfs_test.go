package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

func TestMappingAt(t *testing.T) {
	b, err := unix.Mmap(-1, 0, 3*4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	start := uint64(uintptr(unsafe.Pointer(&b[0])))
	m, ok := MappingAt(os.Getpid(), start+4096)
	if !ok || m.Start > start || m.End < start+3*4096 || m.Inode != 0 {
		t.Fatalf("mapping of %#x: %+v %v", start, m, ok)
	}
	l, ok := parseMapsLine([]byte("7eff2810c000-7eff2820c000 rw-s 400000800000 00:27 9223372036854775809    /tmp/x/dev/neuron0"))
	if !ok || l.Start != 0x7eff2810c000 || l.End != 0x7eff2820c000 || l.Offset != 0x400000800000 || l.Major != 0 || l.Minor != 0x27 || l.Inode != 9223372036854775809 {
		t.Fatalf("parsed %+v %v", l, ok)
	}
	if _, ok := parseMapsLine([]byte("garbage")); ok {
		t.Fatal("garbage parsed")
	}
}
