package fs_test

import (
	"bytes"
	"errors"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// held sums what every device's backing holds.
func held(t *testing.T, sys *device.System) uint64 {
	t.Helper()
	var n uint64
	for _, d := range sys.Devices {
		r, err := d.Chip().PhysicalResident()
		if err != nil {
			t.Fatal(err)
		}
		n += r
	}
	return n
}

// On memfd with a 512 MiB limit, a write that would make the backing hold
// more fails the way its path fails on the driver, allocations never do,
// and another process's memory stays intact and usable.
func TestMemoryLimitMemfd(t *testing.T) {
	t.Setenv(device.BackingEnv, "") // memfd, whatever the suite's default
	const limit = 512 << 20
	d := testutil.StartDaemon(t, device.Config{Instance: "trn2.3xlarge", Backing: device.Backing{}, MemoryLimit: limit})
	if lim, _ := d.Sys.MemoryLimit(); lim != limit {
		t.Fatalf("limit %d, want %d", lim, limit)
	}
	// Another process holds 64 MiB of HBM and 64 MiB of host memory,
	// filled with 0x5a.
	helper, handles, stop := startAllocHelper(t, d.Dir)
	defer func() { stop.Close(); helper.Wait() }()
	dev, err := runtime.Host{Root: d.Dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	// Allocations past the limit succeed: only writes count.
	a := mustMem(t, dev, 256<<20, runtime.AllocOptions{Channel: 0})
	b := mustMem(t, dev, 256<<20, runtime.AllocOptions{Channel: 2})
	h := mustMem(t, dev, 16<<20, runtime.AllocOptions{Host: true})
	data := bytes.Repeat([]byte{0xa5}, 256<<20)
	if err := a.Write(0, data); err != nil {
		t.Fatalf("a write inside the limit: %v", err)
	}
	// Device memory: the bounce DMA fails, -1 (EPERM); nothing is written.
	if err := b.Write(0, data); !isErrno(err, unix.EPERM) {
		t.Fatalf("a device write past the limit: %v, want EPERM", err)
	}
	if err := b.Fill(0, 256<<20, 1); !isErrno(err, unix.EPERM) {
		t.Errorf("a memset past the limit: %v, want EPERM", err)
	}
	if err := b.CopyFrom(0, a, 0, 256<<20); !isErrno(err, unix.EPERM) {
		t.Errorf("a chunk copy past the limit: %v, want EPERM", err)
	}
	if got := held(t, d.Sys); got > limit {
		t.Errorf("the backing holds %d, over the limit %d", got, limit)
	}
	// The other process's memory is intact, and writing it (already
	// held) works.
	got := make([]byte, 64<<20)
	if r, e := bufCopy(dev.Fd(), handles[0], got, false); r != 0 || e != 0 || !bytes.Equal(got, bytes.Repeat([]byte{0x5a}, 64<<20)) {
		t.Errorf("the other process's chunk after the refusals: %d, %v", r, e)
	}
	if r, e := bufCopy(dev.Fd(), handles[0], data[:64<<20], true); r != 0 || e != 0 {
		t.Errorf("rewriting the other process's held chunk: %d, %v", r, e)
	}
	// Host memory past the limit: copy_from_user copies nothing (a
	// positive count). Fill b up to 32 KiB short of the limit first, DMA
	// rings and the staging buffer included.
	q, err := dev.InitQueue(7, 2, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	src := mustMem(t, dev, 1<<16, runtime.AllocOptions{Host: true})
	if err := src.Write(0, data[:1<<16]); err != nil {
		t.Fatal(err)
	}
	left := limit - held(t, d.Sys)
	if err := b.Write(0, data[:left-32<<10]); err != nil {
		t.Fatalf("filling up to the limit: %v", err)
	}
	var re *runtime.Error
	if err := h.Write(0, data[:16<<20]); !errors.As(err, &re) || re.NotCopied != 16<<20 {
		t.Errorf("a host write past the limit: %v, want 16 MiB not copied", err)
	}
	// A DMA write past the limit aborts its queue with a write error.
	if err := q.Submit([]runtime.Copy{{Src: src.PA, Dst: b.PA + 1000<<20, Len: 0}}); err != nil {
		t.Fatal(err)
	}
	if _, rx := waitAborted(t, q); rx.HWStatus&dma.StatusWriteError == 0 {
		t.Errorf("aborted without a write error: %+v", rx)
	}
	// Freed memory returns to the host, and the write then fits.
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(0, data); err != nil {
		t.Errorf("a write after a free made room: %v", err)
	}
}

// File-backed memory behaves as memfd memory does: shared mappings,
// copies, punch on free; and with a limit the daemon's resident set stays
// under it, the pages left to the kernel's page cache.
func TestFileBacking(t *testing.T) {
	dir := t.TempDir()
	const limit = 256 << 20
	d := testutil.StartDaemon(t, device.Config{Instance: "trn2.3xlarge", Backing: device.Backing{Dir: dir}, MemoryLimit: limit})
	if _, b := d.Sys.MemoryLimit(); b.Dir != dir {
		t.Fatalf("backing %v, want file:%s", b, dir)
	}
	dev, err := runtime.Host{Root: d.Dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	m := mustMem(t, dev, 1<<30, runtime.AllocOptions{Channel: 2})
	view := mustMap(t, m)
	buf := make([]byte, 16<<20)
	for off := uint64(0); off < m.Size; off += uint64(len(buf)) {
		for i := range buf {
			buf[i] = byte(off>>20) ^ byte(i)
		}
		if err := m.Write(off, buf); err != nil {
			t.Fatalf("write at %#x: %v", off, err)
		}
	}
	// The mapping sees what the copies wrote; a store through it is what
	// a copy reads.
	for _, off := range []uint64{0, 300 << 20, m.Size - 1} {
		if want := byte(off>>20&^15) ^ byte(off%(16<<20)); view[off] != want {
			t.Errorf("mapped byte %#x = %#x, want %#x", off, view[off], want)
		}
	}
	view[5] = 0x77
	got := make([]byte, 8)
	if err := m.Read(0, got); err != nil || got[5] != 0x77 {
		t.Errorf("a mapped store read back %x, %v", got, err)
	}
	if held(t, d.Sys) < 1<<30 {
		t.Errorf("the files hold %d bytes after 1 GiB was written", held(t, d.Sys))
	}
	// The daemon's own mappings of the file were dropped past the limit:
	// its window over the chunk maps at most a limit and a trim step of
	// it (other tests of this binary may share the resident set).
	win, err := d.Sys.Devices[0].Chip().PhysView(m.PA, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rss := mappingRSS(t, uintptr(unsafe.Pointer(&win[0]))); rss > limit+limit/4 {
		t.Errorf("the daemon's window maps %d MiB after 1 GiB was written with a %d MiB limit", rss>>20, limit>>20)
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if h := held(t, d.Sys); h > 64<<20 {
		t.Errorf("the files hold %d bytes after the free", h)
	}
}

// bufCopy runs MEM_BUF_COPY64 between p and the chunk of handle h.
func bufCopy(fd int, h uint64, p []byte, toChunk bool) (int, unix.Errno) {
	v := ioctl.MemBufCopy64{MemHandle: h, Buffer: uint64(uintptr(unsafe.Pointer(&p[0]))), Size: uint64(len(p))}
	if toChunk {
		v.CopyToMemHandle = 1
	}
	r, e := testutil.Ioctl(fd, ioctl.CmdMemBufCopy64, &v)
	goruntime.KeepAlive(p)
	return r, e
}

// mappingRSS reads, from /proc/self/smaps, how much of the mapping that
// holds addr is resident in this process.
func mappingRSS(t *testing.T, addr uintptr) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && len(f) >= 5 {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < z
			continue
		}
		if in && f[0] == "Rss:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}
