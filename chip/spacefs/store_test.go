package spacefs

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

func newTestStore(t *testing.T, span uint64) *store {
	t.Helper()
	fd, err := UnnamedFile(mustDir(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return newStore(fd, span)
}

func mustDir(t *testing.T) int {
	fd, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// Addresses far apart land next to each other in the file, and a wholly
// punched extent is handed to the next new address.
func TestStoreIsCompact(t *testing.T) {
	s := newTestStore(t, 1<<48)
	high, host := uint64(0x8084c0000000), uint64(0x4000_0000_0000)
	a := bytes.Repeat([]byte{0xa5}, 3*extentSize/2) // crosses an extent
	if err := s.write(a, high+100); err != nil {
		t.Fatal(err)
	}
	if err := s.write([]byte("host"), host); err != nil {
		t.Fatal(err)
	}
	if s.end != 3*extentSize {
		t.Fatalf("file uses %#x bytes for three extents", s.end)
	}
	got := make([]byte, len(a)+200)
	if err := s.read(got, high); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[100:100+len(a)], a) || got[99] != 0 || got[100+len(a)] != 0 {
		t.Fatal("read back differs")
	}
	// Punch the extent holding "host": its offset is reused.
	if err := s.punch(host, extentSize); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	s.read(b, host)
	if !bytes.Equal(b, make([]byte, 4)) {
		t.Fatalf("punched memory reads %q", b)
	}
	if err := s.write([]byte("next"), 0x1000_0000_0000); err != nil {
		t.Fatal(err)
	}
	if s.end != 3*extentSize || len(s.free) != 0 {
		t.Fatalf("punched extent not reused: end %#x, free %v", s.end, s.free)
	}
	// A partial punch zeroes the range and keeps the extent.
	if err := s.punch(high+200, 10); err != nil {
		t.Fatal(err)
	}
	s.read(got[:20], high+195)
	if got[0] != 0xa5 || got[5] != 0 || got[14] != 0 || got[15] != 0xa5 {
		t.Fatalf("partial punch: % x", got[:20])
	}
}

func TestStoreBounds(t *testing.T) {
	s := newTestStore(t, 4*extentSize)
	if err := s.write([]byte{1}, 4*extentSize); err == nil {
		t.Fatal("write past the span accepted")
	}
	if err := s.punch(3*extentSize, 2*extentSize); err == nil {
		t.Fatal("punch past the span accepted")
	}
	if err := s.reserve(extentSize, extentSize); err != nil {
		t.Fatal(err)
	}
	if s.blocks() < extentSize/512 {
		t.Fatalf("reserve left %d blocks", s.blocks())
	}
	b := []byte{9, 9}
	if err := s.read(b, 4*extentSize-1); err != nil || b[0] != 0 || b[1] != 0 {
		t.Fatalf("read at the end: %v % x", err, b)
	}
}

func TestParseFileName(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		span uint64
	}{
		{fileName("neuron3", 1<<47), true, 1 << 47},
		{"neuron0.zz", false, 0},
		{"neuron0", false, 0},
		{".200000", false, 0},
		{"n.0", false, 0},
		{"n.1001", false, 0}, // not whole extents
	} {
		_, span, ok := parseFileName(c.in)
		if ok != c.ok || span != c.span {
			t.Errorf("%q: %v %#x", c.in, ok, span)
		}
	}
}

func FuzzStore(f *testing.F) {
	f.Add(uint64(0), uint32(10), uint8(0))
	f.Add(uint64(extentSize-3), uint32(extentSize), uint8(1))
	f.Fuzz(func(t *testing.T, off uint64, n uint32, op uint8) {
		s := newTestStore(t, 8*extentSize)
		n %= 3 * extentSize
		ref := make([]byte, 8*extentSize)
		data := bytes.Repeat([]byte{op | 1}, int(n))
		inSpan := off <= s.span && uint64(n) <= s.span-off
		switch op % 3 {
		case 0:
			if err := s.write(data, off); (err == nil) != inSpan {
				t.Fatalf("write %#x+%#x: %v", off, n, err)
			}
			if inSpan {
				copy(ref[off:], data)
			}
		case 1:
			s.write(bytes.Repeat([]byte{7}, len(ref)), 0)
			for i := range ref {
				ref[i] = 7
			}
			if err := s.punch(off, uint64(n)); (err == nil) != inSpan {
				t.Fatalf("punch %#x+%#x: %v", off, n, err)
			}
			if inSpan {
				clear(ref[off : off+uint64(n)])
			}
		case 2:
			if err := s.reserve(off, uint64(n)); (err == nil) != inSpan {
				t.Fatalf("reserve %#x+%#x: %v", off, n, err)
			}
		}
		got := make([]byte, len(ref))
		if err := s.read(got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, ref) {
			t.Fatal("store differs from the reference")
		}
	})
}
