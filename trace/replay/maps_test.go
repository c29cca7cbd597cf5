package replay

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/trace"
)

// openFakeNode replays an open of fake node 0 and returns the state.
func openFakeNode(t *testing.T, size int64) *state {
	t.Helper()
	nodes := fakeNodes(t, 1)
	if err := os.Truncate(nodes.dir+"/neuron0", size); err != nil {
		t.Fatal(err)
	}
	s := newState(&trace.Trace{}, Options{nodes: nodes})
	t.Cleanup(func() {
		for _, m := range s.maps {
			unix.Syscall(unix.SYS_MUNMAP, uintptr(m.addr), uintptr(m.len), 0)
		}
		closeAll(s)
	})
	if res := replayOne(t, s, trace.Record{Seq: 1, Op: trace.OpOpen, TGID: 7, TID: 7, FD: 3, Path: nodes.dir + "/neuron0", Flags: unix.O_RDWR, Ret: 3}); res.Status != Match {
		t.Fatalf("open: %+v", res)
	}
	return s
}

// rss is the resident size smaps gives the mapping at addr.
func rss(t *testing.T, addr uint64) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	header := fmt.Sprintf("%x-", addr)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if k, _, _ := strings.Cut(line, " "); !strings.HasSuffix(k, ":") {
			in = strings.HasPrefix(line, header) // a mapping's first line
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("smaps %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no mapping at %#x in smaps", addr)
	return 0
}

// A recorded mmap passes the mapping type and PROT_READ|PROT_WRITE only:
// MAP_POPULATE (and MAP_LOCKED, MAP_ANONYMOUS, PROT_EXEC...) are noted
// as not passed, so the mapping is not populated; one longer than any
// device memory is skipped.
func TestReplayBoundsMmap(t *testing.T) {
	const size = 2 << 20
	s := openFakeNode(t, size)
	res := replayOne(t, s, trace.Record{Seq: 2, Op: trace.OpMmap, TGID: 7, TID: 7, FD: 3, Addr: 0x7f0000000000, Len: size,
		Prot:   unix.PROT_READ | unix.PROT_WRITE | unix.PROT_EXEC,
		MFlags: unix.MAP_SHARED | unix.MAP_POPULATE | unix.MAP_LOCKED | unix.MAP_ANONYMOUS | unix.MAP_FIXED})
	notes := strings.Join(res.NotCompared, "; ")
	if res.Status != Match || !strings.Contains(notes, fmt.Sprintf("flags %#x (not passed", unix.MAP_POPULATE|unix.MAP_LOCKED|unix.MAP_ANONYMOUS)) ||
		!strings.Contains(notes, fmt.Sprintf("prot %#x (not passed", unix.PROT_EXEC)) {
		t.Errorf("mmap: %+v", res)
	}
	m := s.maps[mapKey{7, 0x7f0000000000}]
	if got := rss(t, m.addr); got != 0 {
		t.Errorf("the mapping is populated: %d bytes resident", got)
	}

	for _, length := range []uint64{maxMapLen + 1, 1 << 46, 1<<64 - 4096} {
		res := replayOne(t, s, trace.Record{Seq: 3, Op: trace.OpMmap, TGID: 7, TID: 7, FD: 3, Addr: 0x7f1000000000, Len: length,
			Prot: unix.PROT_READ, MFlags: unix.MAP_SHARED | unix.MAP_NORESERVE})
		if res.Status != Skipped || !strings.Contains(strings.Join(res.NotCompared, ""), "over replay's cap") {
			t.Errorf("mmap of %#x bytes: %+v, want skipped", length, res)
		}
		if _, ok := s.maps[mapKey{7, 0x7f1000000000}]; ok {
			t.Errorf("mmap of %#x bytes was made", length)
		}
	}
}

// mapArgs keeps the mapping type and read/write; a type that is neither
// shared nor private is not issued.
func TestMapArgs(t *testing.T) {
	for _, c := range []struct {
		prot, flags      uint64
		wantProt, wantFl uint64
		dropped, skipWhy string
	}{
		{unix.PROT_READ, unix.MAP_SHARED, unix.PROT_READ, unix.MAP_SHARED, "", ""},
		{unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_FIXED, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE, "", ""},
		{unix.PROT_READ, unix.MAP_SHARED_VALIDATE | unix.MAP_SYNC, unix.PROT_READ, unix.MAP_SHARED, "flags 0x80000", ""},
		{unix.PROT_READ | unix.PROT_GROWSDOWN, unix.MAP_SHARED | unix.MAP_HUGETLB, unix.PROT_READ, unix.MAP_SHARED, "flags 0x40000,prot 0x1000000", ""},
		{unix.PROT_READ, 0, 0, 0, "", "mapping type 0x0"},
		{unix.PROT_READ, 0xf, 0, 0, "", "mapping type 0xf"},
	} {
		p, f, dropped, why := mapArgs(4096, c.prot, c.flags)
		if p != c.wantProt || f != c.wantFl || strings.Join(dropped, ",") != c.dropped || !strings.HasPrefix(why, c.skipWhy) || (why == "") != (c.skipWhy == "") {
			t.Errorf("mapArgs(%#x, %#x) = %#x, %#x, %q, %q", c.prot, c.flags, p, f, dropped, why)
		}
	}
}

// The cap is above every chunk a device can hand out: a chunk lives in
// one HBM channel.
func TestMapCapCoversHBM(t *testing.T) {
	for _, a := range []dhal.Arch{dhal.V2, dhal.V3, dhal.V4} {
		f, err := dhal.Facts(a)
		if err != nil {
			t.Fatal(err)
		}
		if f.HBMSize > maxMapLen {
			t.Errorf("%v: an HBM channel of %#x bytes is over the mmap cap %#x", a, f.HBMSize, uint64(maxMapLen))
		}
	}
}

// A recorded munmap longer than the mapping replay made unmaps that
// mapping only: past it is the worker's own memory.
func TestReplayMunmapStaysInItsMapping(t *testing.T) {
	s := openFakeNode(t, 0)
	page := unix.Getpagesize()
	// Two pages of the test's own: the first stands for a replayed
	// mapping, the second for what lies past it.
	b, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	b[page] = 1
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	s.maps[mapKey{7, 0x7f0000000000}] = mapping{addr, uint64(page)}
	res := replayOne(t, s, trace.Record{Seq: 2, Op: trace.OpMunmap, TGID: 7, TID: 7, FD: -1, Addr: 0x7f0000000000, Len: 1 << 30})
	if res.Status != Match || !strings.Contains(strings.Join(res.NotCompared, ""), "length (recorded 0x40000000") {
		t.Errorf("munmap: %+v", res)
	}
	if e := mincore(addr + uint64(page)); e != 0 {
		t.Fatalf("the page past the replayed mapping was unmapped: %v", e)
	}
	if e := mincore(addr); e != unix.ENOMEM {
		t.Errorf("the replayed mapping is still there: mincore %v", e)
	}
}

// mincore asks whether the page at addr is mapped (ENOMEM if not),
// without touching it.
func mincore(addr uint64) unix.Errno {
	var vec [1]byte
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(addr), 1, uintptr(unsafe.Pointer(&vec[0])))
	return e
}
