package mempool

import (
	"math/rand"
	"testing"
)

// bitmapPool is a literal model of lib/genalloc.c over a bitmap (true =
// used), used to check the extent implementation bit for bit.
type bitmapPool struct {
	base, va uint64
	bits     []bool
}

func (b *bitmapPool) avail() uint64 {
	n := uint64(0)
	for _, u := range b.bits {
		if !u {
			n++
		}
	}
	return n << granuleShift
}

func (b *bitmapPool) nextZero(size, start uint64) uint64 {
	for i := start; i < size; i++ {
		if !b.bits[i] {
			return i
		}
	}
	return size
}

func (b *bitmapPool) nextOne(size, start uint64) uint64 {
	for i := start; i < size; i++ {
		if b.bits[i] {
			return i
		}
	}
	return size
}

// areaOff is bitmap_find_next_zero_area_off.
func (b *bitmapPool) areaOff(start, nr, mask, off uint64) uint64 {
	size := uint64(len(b.bits))
	for {
		index := b.nextZero(size, start)
		index = alignMask(index+off, mask) - off
		end := index + nr
		if end > size {
			return end
		}
		i := b.nextOne(end, index)
		if i < end {
			start = i + 1
			continue
		}
		return index
	}
}

// allocAlgo is gen_pool_alloc_algo_owner with one chunk.
func (b *bitmapPool) allocAlgo(size uint64, algo func(nr uint64) uint64) (uint64, bool) {
	if size == 0 || size > b.avail() {
		return 0, false
	}
	nr := (size + Granule - 1) >> granuleShift
	start := algo(nr)
	if start >= uint64(len(b.bits)) {
		return 0, false
	}
	for i := start; i < start+nr; i++ {
		b.bits[i] = true
	}
	return b.base + start<<granuleShift, true
}

func (b *bitmapPool) alloc(size uint64) (uint64, bool) {
	return b.allocAlgo(size, func(nr uint64) uint64 { return b.areaOff(0, nr, 0, 0) })
}

func (b *bitmapPool) allocAlign(size, align uint64) (uint64, bool) {
	return b.allocAlgo(size, func(nr uint64) uint64 {
		mask := ((align + Granule - 1) >> granuleShift) - 1
		off := (b.va & (align - 1)) >> granuleShift
		return b.areaOff(0, nr, mask, off)
	})
}

func (b *bitmapPool) allocFixed(offset, size uint64) (uint64, bool) {
	return b.allocAlgo(size, func(nr uint64) uint64 {
		n := uint64(len(b.bits))
		if offset&(Granule-1) != 0 {
			return n
		}
		bit := offset >> granuleShift
		var found uint64
		if bit >= n {
			found = n + nr // find_next_zero_bit finds nothing
		} else {
			found = b.areaOff(bit, nr, 0, 0)
		}
		if found != bit {
			return n
		}
		return found
	})
}

func (b *bitmapPool) free(addr, size uint64) {
	s := (addr - b.base) >> granuleShift
	for i := s; i < s+(size>>granuleShift); i++ {
		b.bits[i] = false
	}
}

// checkExtents verifies the treap invariants and that it describes exactly
// the free bits of the model.
func checkExtents(t *testing.T, g *genpool, want []bool) {
	t.Helper()
	var prevEnd uint64
	var first = true
	var total uint64
	count := 0
	var walk func(n *extent) uint64
	walk = func(n *extent) uint64 {
		if n == nil {
			return 0
		}
		lm := walk(n.left)
		if n.start >= n.end {
			t.Fatalf("empty extent [%d,%d)", n.start, n.end)
		}
		if !first && n.start <= prevEnd {
			t.Fatalf("extent [%d,%d) overlaps or touches previous end %d", n.start, n.end, prevEnd)
		}
		for i := n.start; i < n.end; i++ {
			if want[i] {
				t.Fatalf("granule %d free in extents, used in model", i)
			}
		}
		if n.start > 0 && !first {
			for i := prevEnd; i < n.start; i++ {
				if !want[i] {
					t.Fatalf("granule %d used in extents, free in model", i)
				}
			}
		}
		first = false
		prevEnd = n.end
		total += n.length()
		count++
		rm := walk(n.right)
		m := max(n.length(), lm, rm)
		if n.maxLen != m {
			t.Fatalf("maxLen %d, want %d", n.maxLen, m)
		}
		return m
	}
	walk(g.fs.root)
	free := uint64(0)
	for _, u := range want {
		if !u {
			free++
		}
	}
	if total != free || g.fs.free != free || g.fs.count != count {
		t.Fatalf("free granules: extents %d, counter %d, model %d (count %d vs %d)", total, g.fs.free, free, g.fs.count, count)
	}
}

func TestGenpoolMatchesBitmapModel(t *testing.T) {
	aligns := []uint64{Granule + 1, 2 * Granule, 3 * Granule, 3*Granule + 1, 4 * Granule, 5 * Granule,
		6 * Granule, 8 * Granule, 11 * Granule, 12 * Granule, 16 * Granule, 64 * Granule, 1 << 30}
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		nbits := uint64(16 + rng.Intn(300))
		// Bases that are not aligned to large powers of two exercise the
		// kernel's alignment offset.
		base := uint64(0x1000000) + uint64(rng.Intn(64))*Granule
		va := base | DevmemVABit
		g := newGenpool(base, nbits*Granule, va)
		m := &bitmapPool{base: base, va: va, bits: make([]bool, nbits)}
		type live struct{ addr, size uint64 }
		var chunks []live
		for op := 0; op < 600; op++ {
			var got, want uint64
			var gok, wok bool
			size := uint64(rng.Intn(24)) * Granule
			if rng.Intn(8) == 0 {
				size += uint64(rng.Intn(Granule)) // unrounded sizes round up like the kernel
			}
			switch k := rng.Intn(10); {
			case k < 3 && len(chunks) > 0:
				i := rng.Intn(len(chunks))
				c := chunks[i]
				chunks = append(chunks[:i], chunks[i+1:]...)
				rounded := (c.size + Granule - 1) &^ (Granule - 1)
				g.free(c.addr, c.size)
				m.free(c.addr, rounded)
				checkExtents(t, g, m.bits)
				continue
			case k < 6:
				got, gok = g.alloc(size)
				want, wok = m.alloc(size)
			case k < 9:
				a := aligns[rng.Intn(len(aligns))]
				got, gok = g.allocAlign(size, a)
				want, wok = m.allocAlign(size, a)
			default:
				off := uint64(rng.Intn(int(nbits)+4)) * Granule
				if rng.Intn(10) == 0 {
					off = -off // wrapped offsets fail
				}
				got, gok = g.allocFixed(off, size)
				want, wok = m.allocFixed(off, size)
			}
			if gok != wok || got != want {
				t.Fatalf("seed %d op %d: extents gave (%#x,%v), bitmap model (%#x,%v)", seed, op, got, gok, want, wok)
			}
			if gok {
				chunks = append(chunks, live{got, size})
			}
			checkExtents(t, g, m.bits)
		}
	}
}

func TestGenpoolAlignedSearchPaths(t *testing.T) {
	// The fast aligned search must agree with the literal replay for masks
	// of the form 2^k-1.
	rng := rand.New(rand.NewSource(7))
	g := newGenpool(0x3000, 4096*Granule, 0x3000)
	for i := 0; i < 2000; i++ {
		if _, ok := g.alloc(uint64(1+rng.Intn(8)) * Granule); !ok {
			break
		}
	}
	// Punch holes of assorted sizes.
	for i := uint64(0); i < 4096; i += uint64(3 + rng.Intn(40)) {
		n := uint64(1 + rng.Intn(12))
		if i+n > 4096 {
			break
		}
		ok := true // free only runs that are wholly in use
		for j := i; j < i+n; j++ {
			if g.fs.containing(j) != nil {
				ok = false
			}
		}
		if ok {
			g.free(g.addr(i), n*Granule)
		}
	}
	for _, mask := range []uint64{0, 1, 3, 7, 15, 63} {
		for _, off := range []uint64{0, 1, 3} {
			for nr := uint64(1); nr < 20; nr++ {
				a, aok := g.searchAligned(nr, mask, off&mask)
				b, bok := g.searchAlignedLiteral(nr, mask, off&mask)
				if a != b || aok != bok {
					t.Fatalf("mask %d off %d nr %d: fast (%d,%v) literal (%d,%v)", mask, off, nr, a, aok, b, bok)
				}
			}
		}
	}
}

func TestGenpoolEmptyAndFull(t *testing.T) {
	g := newGenpool(0, 4*Granule, DevmemVABit)
	if _, ok := g.alloc(0); ok {
		t.Fatal("zero-size allocation succeeded")
	}
	if _, ok := g.alloc(5 * Granule); ok {
		t.Fatal("allocation beyond avail succeeded")
	}
	a, ok := g.alloc(4 * Granule)
	if !ok || a != 0 {
		t.Fatalf("full allocation at %#x, %v", a, ok)
	}
	if _, ok := g.alloc(Granule); ok {
		t.Fatal("allocation from a full pool succeeded")
	}
	g.free(a, 4*Granule)
	if g.fs.count != 1 || g.availBytes() != 4*Granule {
		t.Fatalf("after free: %d extents, %#x bytes", g.fs.count, g.availBytes())
	}
}
