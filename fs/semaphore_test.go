package fs_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

func TestSemaphoresAndEvents(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	sem := func(name string, cmd uint32, v ioctl.Semaphore, wantE unix.Errno) ioctl.Semaphore {
		t.Helper()
		r, e := testutil.Ioctl(fd, cmd, &v)
		expectErrno(t, name, r, e, 0, wantE)
		return v
	}
	sem("write", ioctl.CmdSemaphoreWrite, ioctl.Semaphore{NCID: 1, SemaphoreIndex: 7, Value: 10}, 0)
	sem("increment", ioctl.CmdSemaphoreIncrement, ioctl.Semaphore{NCID: 1, SemaphoreIndex: 7, Value: 5}, 0)
	sem("decrement", ioctl.CmdSemaphoreDecrement, ioctl.Semaphore{NCID: 1, SemaphoreIndex: 7, Value: 3}, 0)
	if v := sem("read", ioctl.CmdSemaphoreRead, ioctl.Semaphore{NCID: 1, SemaphoreIndex: 7}, 0); v.Value != 12 {
		t.Errorf("semaphore value %d, want 12", v.Value)
	}
	// The index is truncated to 16 bits first: 0x10007 is semaphore 7.
	if v := sem("read 0x10007", ioctl.CmdSemaphoreRead, ioctl.Semaphore{NCID: 1, SemaphoreIndex: 0x10007}, 0); v.Value != 12 {
		t.Errorf("truncated index read %d", v.Value)
	}
	sem("core 8", ioctl.CmdSemaphoreRead, ioctl.Semaphore{NCID: 8}, unix.E2BIG)
	sem("index 256", ioctl.CmdSemaphoreRead, ioctl.Semaphore{NCID: 1, SemaphoreIndex: 256}, unix.EINVAL)

	ev := func(name string, cmd uint32, v ioctl.Event, wantE unix.Errno) ioctl.Event {
		t.Helper()
		r, e := testutil.Ioctl(fd, cmd, &v)
		expectErrno(t, name, r, e, 0, wantE)
		return v
	}
	ev("event set", ioctl.CmdEventSet, ioctl.Event{NCID: 1, EventIndex: 3, Value: 1}, 0)
	if v := ev("event get", ioctl.CmdEventGet, ioctl.Event{NCID: 1, EventIndex: 3}, 0); v.Value != 1 {
		t.Errorf("event %d", v.Value)
	}
	ev("event 256 (one past the end, accepted)", ioctl.CmdEventGet, ioctl.Event{NCID: 1, EventIndex: 256}, 0)
	ev("event 257", ioctl.CmdEventGet, ioctl.Event{NCID: 1, EventIndex: 257}, unix.EINVAL)

	// The SEMAPHORE resource maps the live values.
	res := ioctl.ResourceMmapInfo{Block: 0, BlockID: 1, Resource: 0}
	r, e := testutil.Ioctl(fd, ioctl.CmdResourceMmapInfo, &res)
	expectErrno(t, "RESOURCE_MMAP_INFO", r, e, 0, 0)
	m, err := unix.Mmap(fd, int64(res.Offset), int(res.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if got := binary.LittleEndian.Uint32(m[0x1000+4*7:]); got != 12 {
		t.Errorf("mapped semaphore 7 reads %d, want 12", got)
	}
	if got := binary.LittleEndian.Uint32(m[4*3:]); got != 1 {
		t.Errorf("mapped event 3 reads %d, want 1", got)
	}
}

func init() {
	// "seminc" adds 1 to core 0's semaphore 3 NEURONFS_SEM_N times.
	helpers["seminc"] = func() int {
		fd, err := unix.Open(os.Getenv("NEURONFS_ROOT")+"/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_SEM_N"))
		for range n {
			v := ioctl.Semaphore{NCID: 0, SemaphoreIndex: 3, Value: 1}
			if r, e := testutil.Ioctl(fd, ioctl.CmdSemaphoreIncrement, &v); r != 0 || e != 0 {
				fmt.Println("err", r, e)
				return 1
			}
		}
		return 0
	}
}

// Two processes incrementing one semaphore at once lose nothing.
func TestSemaphoreConcurrentProcesses(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	const n = 3000
	var cmds []*exec.Cmd
	for range 2 {
		cmd := helperCmd(t, "seminc", "NEURONFS_ROOT="+dir, "NEURONFS_SEM_N="+strconv.Itoa(n))
		cmd.Stdout = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	fd := openDev(t, dir, 0, unix.O_RDWR)
	v := ioctl.Semaphore{NCID: 0, SemaphoreIndex: 3}
	r, e := testutil.Ioctl(fd, ioctl.CmdSemaphoreRead, &v)
	expectErrno(t, "SEMAPHORE_READ", r, e, 0, 0)
	if v.Value != 2*n {
		t.Fatalf("semaphore %d after 2 x %d increments", v.Value, n)
	}
}

// Stores through a mapping of the SEMAPHORE resource take effect: the
// sweeper applies set, increment and decrement window stores.
func TestMappedSemaphoreWindows(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	res, ok := sys.Arch.LookupMmapResource(dhal.BlockTPB, 3, dhal.ResourceSemaphore)
	if !ok {
		t.Fatal("no semaphore resource")
	}
	m, err := unix.Mmap(fd, int64(res.Offset), int(res.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	word := func(off int) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	const idx = 17
	read := 0x1000 + 4*idx
	atomic.StoreUint32(word(0x1400+4*idx), 30) // set
	// Without any ioctl the sweeper applies it within a few milliseconds.
	deadline := time.Now().Add(5 * time.Second)
	for atomic.LoadUint32(word(read)) != 30 {
		if time.Now().After(deadline) {
			t.Fatalf("mapped set never applied: read window %d", atomic.LoadUint32(word(read)))
		}
		time.Sleep(time.Millisecond)
	}
	if atomic.LoadUint32(word(0x1400+4*idx)) != 0 {
		t.Error("the set window was not consumed")
	}
	atomic.StoreUint32(word(0x1800+4*idx), 5) // increment
	atomic.StoreUint32(word(0x1c00+4*idx), 2) // decrement
	// An ioctl read sweeps first, so it sees both stores at once.
	v := ioctl.Semaphore{NCID: 3, SemaphoreIndex: idx}
	r, e := testutil.Ioctl(fd, ioctl.CmdSemaphoreRead, &v)
	expectErrno(t, "SEMAPHORE_READ", r, e, 0, 0)
	if v.Value != 33 {
		t.Errorf("semaphore %d after set 30, +5, -2 through the mapping", v.Value)
	}

	// A TopSP's semaphore block has the same windows (the proxy's
	// nec_inc_semaphore store); no ioctl reaches it, the sweeper does.
	ts, ok := sys.Arch.LookupMmapResource(dhal.BlockTopSP, 9, dhal.ResourceSemaphore)
	if !ok {
		t.Fatal("no TopSP semaphore resource")
	}
	tm, err := unix.Mmap(fd, int64(ts.Offset), int(ts.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(tm)
	tword := func(off int) *uint32 { return (*uint32)(unsafe.Pointer(&tm[off])) }
	atomic.StoreUint32(tword(0x1800+4*idx), 3)
	atomic.StoreUint32(tword(0x1800+4*(idx+1)), 4)
	for atomic.LoadUint32(tword(0x1000+4*idx)) != 3 || atomic.LoadUint32(tword(0x1000+4*(idx+1))) != 4 {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("mapped TopSP increments never applied: %d %d", atomic.LoadUint32(tword(0x1000+4*idx)), atomic.LoadUint32(tword(0x1000+4*(idx+1))))
		}
		time.Sleep(time.Millisecond)
	}
}

// Each store into a mapped window takes effect exactly once: a client
// that stores only once the poller consumed its previous store (the word
// reads 0 again) loses and doubles nothing, on a core and a TopSP area.
func TestMappedSemaphoreStoresExactlyOnce(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	for _, r := range []struct {
		block dhal.MmapBlock
		id    uint32
	}{{dhal.BlockTPB, 2}, {dhal.BlockTopSP, 5}} {
		res, ok := sys.Arch.LookupMmapResource(r.block, r.id, dhal.ResourceSemaphore)
		if !ok {
			t.Fatal("no semaphore resource")
		}
		m, err := unix.Mmap(fd, int64(res.Offset), int(res.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		word := func(off int) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
		const idx, n = 40, 200
		inc, read := word(0x1800+4*idx), word(0x1000+4*idx)
		before := atomic.LoadUint32(read)
		for i := range n {
			atomic.StoreUint32(inc, 3) // 3: no doorbell
			deadline := time.Now().Add(10 * time.Second)
			for atomic.LoadUint32(inc) != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("block %d: store %d never consumed", r.block, i)
				}
				time.Sleep(50 * time.Microsecond)
			}
		}
		// The last store is consumed just before it is applied.
		waitWord(t, "the READ view", read, before+3*n)
		time.Sleep(20 * time.Millisecond) // a store applied twice would show by now
		if got := atomic.LoadUint32(read) - before; got != 3*n {
			t.Errorf("block %d: %d stores of 3 added %d", r.block, n, got)
		}
		unix.Munmap(m)
	}
}
