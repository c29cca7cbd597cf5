package chip

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

func TestHBMPatternFillsOncePerBlock(t *testing.T) {
	fd, err := unix.MemfdCreate("pattern", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const base, size = 1 << 20, 4 * patternBlock
	unix.Ftruncate(fd, base+size+patternBlock)
	p := newHBMPattern(fd)
	p.scrub(0, base, size, 0x01020304)
	read := func(off uint64, n int) []byte {
		b := make([]byte, n)
		unix.Pread(fd, b, int64(off))
		return b
	}
	// One byte in block 1 fills all of block 1 and nothing else.
	p.fill(base+patternBlock+7, 1)
	if got := read(base+patternBlock, 8); !bytes.Equal(got, []byte{4, 3, 2, 1, 4, 3, 2, 1}) {
		t.Fatalf("block 1 starts % x", got)
	}
	if got := read(base, 4); !bytes.Equal(got, make([]byte, 4)) {
		t.Fatalf("block 0 filled early: % x", got)
	}
	// A filled block is not filled again over newer data.
	unix.Pwrite(fd, []byte{9, 9}, base+patternBlock)
	p.fill(base, 3*patternBlock)
	if got := read(base+patternBlock, 2); !bytes.Equal(got, []byte{9, 9}) {
		t.Fatalf("block 1 refilled: % x", got)
	}
	// Outside the scrubbed range nothing is written.
	p.fill(base+size, patternBlock)
	if got := read(base+size, 4); !bytes.Equal(got, make([]byte, 4)) {
		t.Fatalf("past the range: % x", got)
	}
	if p.chans.Load() == nil {
		t.Fatal("inactive with block 3 pending")
	}
	p.fill(base+3*patternBlock, 1)
	if p.chans.Load() != nil {
		t.Fatal("still active with every block filled")
	}
	// A second channel's scrub and a zero scrub of the first.
	p.scrub(0, base, size, 7)
	p.scrub(1, base+size, patternBlock, 9)
	p.scrub(0, base, size, 0)
	if cur := p.chans.Load(); cur == nil || len(*cur) != 1 || (*cur)[0].ch != 1 {
		t.Fatal("a zero scrub of channel 0 did not leave channel 1 alone")
	}
}
