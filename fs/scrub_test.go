package fs_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func TestHBMScrubAndDmabuf(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, _ := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
	m.Fill(0, 1<<20, 0x77)
	fd := d.Fd()
	start := func(name string, v ioctl.HBMScrubStart, wantE unix.Errno) {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdHBMScrubStart, &v)
		expectErrno(t, name, r, e, 0, wantE)
	}
	wait := func(name string, v ioctl.HBMScrubWait, wantE unix.Errno) {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdHBMScrubWait, &v)
		expectErrno(t, name, r, e, 0, wantE)
	}
	start("scrub channel 1 with zeros", ioctl.HBMScrubStart{HBMIndex: 1}, 0)
	wait("wait channel 1", ioctl.HBMScrubWait{HBMIndex: 1}, 0)
	got := make([]byte, 4096)
	m.Read(0, got)
	if !bytes.Equal(got, make([]byte, 4096)) {
		t.Fatal("scrub left data behind")
	}
	wait("wait without a scrub", ioctl.HBMScrubWait{HBMIndex: 1}, unix.EPERM)
	start("channel 4", ioctl.HBMScrubStart{HBMIndex: 4}, unix.EPERM)

	dv := ioctl.DMABufFD{VA: 0x1000, Size: 4096}
	r, e := testutil.Ioctl(fd, ioctl.CmdDMABufFD, &dv)
	expectErrno(t, "DMABUF_FD", r, e, 0, unix.EPROTONOSUPPORT)
}

// A non-zero pattern covers the whole channel: live chunks (through the
// copy ioctls and their mappings), chunks allocated later, and memory no
// chunk holds, as a DMA engine reads it; other channels keep theirs. The
// host backs only what was reached.
func TestHBMScrubPattern(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const pattern = 0xa5a50f0f
	want := func(n int) []byte {
		b := make([]byte, n)
		for i := 0; i < n; i += 4 {
			binary.LittleEndian.PutUint32(b[i:], pattern)
		}
		return b
	}
	live := mustMem(t, d, 1<<20, runtime.AllocOptions{Channel: 2})
	liveView := mustMap(t, live)
	live.Fill(0, 1<<20, 0x11)
	other := mustMem(t, d, 64<<10, runtime.AllocOptions{Channel: 1})
	other.Fill(0, 64<<10, 0x22)
	before, err := sys.Devices[0].Chip().PhysicalResident()
	if err != nil {
		t.Fatal(err)
	}

	v := ioctl.HBMScrubStart{HBMIndex: 2, InitVal: pattern}
	r, e := testutil.Ioctl(d.Fd(), ioctl.CmdHBMScrubStart, &v)
	expectErrno(t, "scrub channel 2", r, e, 0, 0)
	w := ioctl.HBMScrubWait{HBMIndex: 2}
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdHBMScrubWait, &w)
	expectErrno(t, "wait channel 2", r, e, 0, 0)

	if !bytes.Equal(liveView, want(1<<20)) {
		t.Fatal("the mapping of a live chunk does not show the pattern")
	}
	got := make([]byte, 1<<20)
	if err := live.Read(0, got); err != nil || !bytes.Equal(got, want(1<<20)) {
		t.Fatalf("MEM_BUF_COPY of a live chunk after the scrub: %v", err)
	}
	later := mustMem(t, d, 2<<20, runtime.AllocOptions{Channel: 2})
	if !bytes.Equal(mustMap(t, later), want(2<<20)) {
		t.Fatal("a chunk allocated after the scrub does not show the pattern")
	}
	o := make([]byte, 64<<10)
	other.Read(0, o)
	if !bytes.Equal(o, bytes.Repeat([]byte{0x22}, 64<<10)) {
		t.Fatal("scrubbing channel 2 changed channel 1")
	}

	// Memory no chunk holds, 8 GiB into the channel, read by DMA.
	host := mustMem(t, d, 4096, runtime.AllocOptions{Host: true})
	hostView := mustMap(t, host)
	marker, err := d.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	q, err := d.InitQueue(0, 1, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	free := sys.Arch.HBMBases[2] + 8<<30
	if err := q.Submit([]runtime.Copy{{Src: free, Dst: host.PA, Len: 4096}, marker.Copy()}); err != nil {
		t.Fatal(err)
	}
	waitMarker(t, marker)
	if !bytes.Equal(hostView, want(4096)) {
		t.Fatalf("DMA from unallocated scrubbed HBM read % x", hostView[:16])
	}

	after, err := sys.Devices[0].Chip().PhysicalResident()
	if err != nil {
		t.Fatal(err)
	}
	if grew := int64(after) - int64(before); grew > 16<<20 {
		t.Errorf("a 24 GiB scrub made the host back %d more bytes; want what was reached (~3 MiB)", grew)
	}

	// A zero scrub forgets the pattern.
	v.InitVal = 0
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdHBMScrubStart, &v)
	expectErrno(t, "zero scrub channel 2", r, e, 0, 0)
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdHBMScrubWait, &w)
	expectErrno(t, "wait channel 2", r, e, 0, 0)
	fresh := mustMem(t, d, 64<<10, runtime.AllocOptions{Channel: 2})
	if !bytes.Equal(mustMap(t, fresh), make([]byte, 64<<10)) {
		t.Fatal("the pattern outlived a zero scrub")
	}
}
