package mmio

import (
	"encoding/binary"
	"errors"
	"testing"
)

// echoBlock models one register that reads back 0xb10c.
type echoBlock struct{}

func (echoBlock) Read32(off uint64) (uint32, bool)  { return 0xb10c, off == 0 }
func (echoBlock) Write32(off uint64, v uint32) bool { return off == 0 }

func testMemoryBAR(t *testing.T, refuse *bool) (*BAR, []byte) {
	t.Helper()
	mem := make([]byte, 0x10000)
	m := Backed{Name: "ram", Base: 0x10000, Size: uint64(len(mem)), Bytes: func(off, n uint64, write bool) ([]byte, error) {
		if write && *refuse {
			return nil, errors.New("limit")
		}
		return mem[off : off+n], nil
	}}
	bar, err := NewBAR(0x100000, []Region{{Name: "reg", Base: 0x10100, Size: 0x10, Block: echoBlock{}}}, m)
	if err != nil {
		t.Fatal(err)
	}
	return bar, mem
}

// A plain register map with no cap: the 2^18+1th distinct word is kept
// like the first (it was dropped silently before).
func TestBARKeepsEveryPlainWord(t *testing.T) {
	bar, err := NewBAR(0x10000000, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1<<18 + 64
	for i := range uint64(n) {
		bar.Write32(4*i, uint32(i)|0x80000000)
	}
	for _, i := range []uint64{0, 1 << 17, 1 << 18, n - 1} {
		if got := bar.Read32(4 * i); got != uint32(i)|0x80000000 {
			t.Fatalf("word %d reads %#x, want %#x", i, got, uint32(i)|0x80000000)
		}
	}
	words, pages := bar.Plain()
	if words != n || len(pages) != (4*n+plainGroup-1)/plainGroup || pages[0].Base != 0 || pages[0].Words != plainGroup/4 {
		t.Fatalf("Plain = %d words in %d pages (first %+v)", words, len(pages), pages[0])
	}
}

// Words of a memory range are its bytes, a block over it keeps its
// behaviour, and a consecutive run is one copy that stops short of a
// block.
func TestBARMemoryUnderBlocks(t *testing.T) {
	var refuse bool
	bar, mem := testMemoryBAR(t, &refuse)
	if err := bar.Write32(0x10004, 0x6099cb34); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(mem[4:]); got != 0x6099cb34 {
		t.Fatalf("memory holds %#x after a BAR write", got)
	}
	binary.LittleEndian.PutUint32(mem[8:], 0x502b2da1)
	if got := bar.Read32(0x10008); got != 0x502b2da1 {
		t.Fatalf("BAR reads %#x of memory holding 0x502b2da1", got)
	}
	if got := bar.Read32(0x10100); got != 0xb10c {
		t.Fatalf("the block's register reads %#x", got)
	}
	if bar.Read32(0x10104) != 0 || bar.Write32(0x10104, 7) != nil || binary.LittleEndian.Uint32(mem[0x104:]) != 7 {
		t.Fatal("a word the block declines is not memory")
	}
	run := make([]byte, 0x40)
	for i := range run {
		run[i] = byte(i + 1)
	}
	if ok, err := bar.WriteRun(0x10200, run); !ok || err != nil {
		t.Fatalf("a run in memory: %v %v", ok, err)
	}
	if string(mem[0x200:0x240]) != string(run) {
		t.Fatal("the run did not land in memory")
	}
	if ok, _ := bar.WriteRun(0x100f0, run); ok {
		t.Fatal("a run over a block was copied")
	}
	if ok, _ := bar.WriteRun(0x1fff0, run); ok {
		t.Fatal("a run past the memory's end was copied")
	}
	refuse = true
	if err := bar.Write32(0x10300, 1); !errors.Is(err, ErrRefused) {
		t.Fatalf("a refused store answers %v", err)
	}
	if _, err := bar.WriteRun(0x10300, run); !errors.Is(err, ErrRefused) {
		t.Fatalf("a refused run answers %v", err)
	}
	if words, _ := bar.Plain(); words != 0 {
		t.Fatalf("%d plain words after memory writes", words)
	}
}

// Plain words are bounded: past MaxPlainWords a new word is refused, not
// dropped, while words already kept still change and zero still clears.
func TestBARPlainWordsBounded(t *testing.T) {
	bar, err := NewBAR(1<<32, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(MaxPlainWords) {
		if err := bar.Write32(4*i, 1); err != nil {
			t.Fatalf("word %d: %v", i, err)
		}
	}
	over := uint64(4 * MaxPlainWords)
	if err := bar.Write32(over, 7); !errors.Is(err, ErrRefused) {
		t.Fatalf("a word past the bound: %v, want ErrRefused", err)
	}
	if got := bar.Read32(over); got != 0 {
		t.Fatalf("the refused word reads %#x", got)
	}
	if err := bar.Write32(8, 9); err != nil || bar.Read32(8) != 9 {
		t.Fatalf("a kept word no longer changes: %v", err)
	}
	if err := bar.Write32(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := bar.Write32(over, 7); err != nil || bar.Read32(over) != 7 {
		t.Fatalf("a word after one was cleared: %v", err)
	}
}
