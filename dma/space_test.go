package dma

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Overlapping and touching ranges merge into one window; addresses
// between windows are unreachable; slices write through to the file.
func TestSpaceWindows(t *testing.T) {
	fd, err := unix.MemfdCreate("space-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 1<<20); err != nil {
		t.Fatal(err)
	}
	m := NewSpace(fd, []Range{{0x8000, 0x1000}, {0x1000, 0x2000}, {0x2000, 0x2000}, {0x3000, 0x1000}})
	defer m.Close()
	if len(m.windows) != 2 {
		t.Fatalf("%d windows, want 2 (0x1000-0x4000 merged, 0x8000)", len(m.windows))
	}
	for i := 1; i < len(m.windows); i++ {
		if m.windows[i-1].base+m.windows[i-1].size >= m.windows[i].base {
			t.Errorf("windows %d and %d touch", i-1, i)
		}
	}
	b, ok := m.Slice(0x3ff0, 16)
	if !ok {
		t.Fatal("merged window unreachable")
	}
	copy(b, "through the file")
	got := make([]byte, 16)
	if _, err := unix.Pread(fd, got, 0x3ff0); err != nil || string(got) != "through the file" {
		t.Errorf("file reads %q, %v", got, err)
	}
	if _, ok := m.Slice(0x4000, 4); ok {
		t.Error("the gap between windows is reachable")
	}
	if _, ok := m.Slice(0x3ffc, 8); ok {
		t.Error("a slice crossing a window's end is reachable")
	}
}
