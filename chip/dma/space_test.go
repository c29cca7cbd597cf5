package dma

import (
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Overlapping and touching ranges merge into one window; addresses
// between windows are unreachable; slices write through to the file.
func TestSpaceWindows(t *testing.T) {
	fd := spaceFile(t, 1<<20)
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

func memfdSpace(t *testing.T, rs []Range) *Space {
	t.Helper()
	fd := spaceFile(t, 1<<20)
	m := NewSpace(fd, rs)
	t.Cleanup(m.Close)
	return m
}

// A neighbour-window address reaches the peer's memory, reads and writes
// alike, with the peer's admission and effect windows; a link with no
// peer is unreachable.
func TestSpacePeerRouteAndEffects(t *testing.T) {
	const route = 1 << 40
	a := memfdSpace(t, []Range{{0, 0x10000}})
	b := memfdSpace(t, []Range{{0, 0x10000}})
	a.PeerRoute = func(pa uint64) (int, uint64, bool) {
		if pa&route == 0 {
			return 0, 0, false
		}
		return int(pa >> 41), pa &^ (route | 1<<41), true
	}
	a.Peer = func(link int) *Space {
		if link == 0 {
			return b
		}
		return nil
	}
	var applied []string
	b.SetEffects([]Effect{{Range: Range{Base: 0x2000, Size: 8}, Apply: func(off uint64, p []byte) {
		applied = append(applied, fmt.Sprintf("%#x:%q", off, p))
	}}})
	refused := false
	b.Admit = func(pa, n uint64) bool { return !refused }

	if !a.Write(route|0x1ffc, []byte("abcdefghijklmnop")) {
		t.Fatal("write through the neighbour window refused")
	}
	got, _ := b.Local(0x1ffc, 16)
	if string(got) != "abcd\x00\x00\x00\x00\x00\x00\x00\x00mnop" {
		t.Errorf("peer memory %q: want the bytes outside the effect window only", got)
	}
	if len(applied) != 1 || applied[0] != `0x0:"efghijkl"` {
		t.Errorf("effect calls %v, want one with the 8 bytes inside the window", applied)
	}
	if r, ok := a.Slice(route|0x1ffc, 4); !ok || string(r) != "abcd" {
		t.Errorf("read through the window: %q %v", r, ok)
	}
	if own, _ := a.Local(0x1ffc, 4); string(own) == "abcd" {
		t.Error("the write landed in the issuing space")
	}
	if a.Write(route|1<<41|0x100, []byte{1}) {
		t.Error("a link without a peer is reachable")
	}
	refused = true
	if a.Write(route|0x100, []byte{1}) {
		t.Error("the peer's memory limit does not apply to remote writes")
	}
}

// Missing counts the pages of a range the file does not hold, across
// more than one batch of mincore, and nothing outside the range.
func TestSpaceMissing(t *testing.T) {
	const size = 64 << 20
	fd := spaceFile(t, size)
	m := NewSpace(fd, []Range{{0, size}})
	defer m.Close()
	if got := m.Missing(0, size); got != size {
		t.Fatalf("empty file: %d missing, want %d", got, size)
	}
	b, _ := m.Local(0, size)
	for off := 0; off < 40<<20; off += 4096 {
		b[off] = 1 // the first 40 MiB: over two batches of 4096 pages
	}
	if got := m.Missing(0, size); got != 24<<20 {
		t.Errorf("40 MiB written: %d missing, want %d", got, 24<<20)
	}
	if got := m.Missing(40<<20-10, 20); got != 4096 {
		t.Errorf("a range across the edge: %d missing, want one page", got)
	}
	if got := m.Missing(100, 5000); got != 0 {
		t.Errorf("written pages: %d missing", got)
	}
}

// A scan abandoned past its deadline may ask Maps while the daemon
// closes the space (CI found the race); after Close nothing is sliced.
func TestSpaceMapsDuringClose(t *testing.T) {
	fd := spaceFile(t, 1<<20)
	m := NewSpace(fd, []Range{{0, 1 << 20}})
	b, ok := m.Local(0, 8)
	if !ok {
		t.Fatal("no window")
	}
	va := uint64(uintptr(unsafe.Pointer(&b[0])))
	done := make(chan bool)
	go func() {
		seen := false
		for i := 0; i < 1000; i++ {
			seen = m.Maps(va) || seen
		}
		done <- seen
	}()
	m.Close()
	<-done
	if m.Maps(va) {
		t.Error("a closed space still claims its old mapping")
	}
	if _, ok := m.Local(0, 8); ok {
		t.Error("a closed space still slices")
	}
}

// spaceFile is a memfd of size bytes, closed when the test ends.
func spaceFile(t *testing.T, size int64) int {
	t.Helper()
	fd, err := unix.MemfdCreate("space-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	return fd
}
