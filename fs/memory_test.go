package fs_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// Every size variant of the memory commands, with raw command numbers.
func TestMemoryCommandVariants(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	mem, err := testutil.OffHeap(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	addr := uint64(testutil.AddrOf(mem))
	handleAt := func(off int) uint64 { return *(*uint64)(unsafe.Pointer(&mem[off])) }

	// Legacy MEM_ALLOC (host) and MEM_ALLOC_V2 (device, channel 3).
	la := ioctl.MemAlloc{Size: 5000, HostMemory: 1, MemHandle: addr}
	r, e := testutil.Ioctl(fd, ioctl.CmdMemAlloc, &la)
	expectErrno(t, "MEM_ALLOC", r, e, 0, 0)
	host := handleAt(0)
	v2 := ioctl.MemAllocV2{Size: 3 << 20, Align: 1 << 20, DramChannel: 3, NCID: 2, MemHandle: addr + 8}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemAllocV2, &v2)
	expectErrno(t, "MEM_ALLOC_V2", r, e, 0, 0)
	dev := handleAt(8)
	if host != 1 || dev != 2 {
		t.Fatalf("handles %d %d, want 1 and 2 (first handle 1, then in order)", host, dev)
	}
	mt := ioctl.MemAllocV2MemType{Size: 4096, MemType: ioctl.MemTypeConstantsDevice, MemHandle: addr + 16}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemAllocV2MT, &mt)
	expectErrno(t, "MEM_ALLOC_V2MT", r, e, 0, 0)
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/memory_usage/device_mem/constants/total"); got != 4096 {
		t.Errorf("constants counter %d after a 4 KiB allocation", got)
	}
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core2/stats/memory_usage/device_mem/uncategorized/total"); got != 3<<20 {
		t.Errorf("core 2 uncategorized %d, want 3 MiB", got)
	}
	if got := testutil.DeviceCounter(t, dir, 0, "stats/memory_usage/host_mem/uncategorized/total"); got != 8192 {
		t.Errorf("host uncategorized %d, want 8192 (5000 rounded to pages)", got)
	}

	// GET_PA, GET_INFO, GET_EXTENDED_INFO.
	gp := ioctl.MemGetPA{MemHandle: dev, PA: addr + 64}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemGetPA, &gp)
	expectErrno(t, "MEM_GET_PA", r, e, 0, 0)
	devPA := handleAt(64)
	if devPA < sys.Arch.HBMBases[3] || devPA%(1<<20) != 0 {
		t.Errorf("channel-3 chunk at %#x (aligned 1 MiB expected)", devPA)
	}
	gi := ioctl.MemGetInfo{MemHandle: host, MmapOffset: addr + 72, PA: addr + 80}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemGetInfo, &gi)
	expectErrno(t, "MEM_GET_INFO", r, e, 0, 0)
	hostPA := handleAt(80)
	if handleAt(72) != hostPA || hostPA&sys.Arch.HostBase == 0 {
		t.Errorf("host chunk pa %#x mmap offset %#x", hostPA, handleAt(72))
	}
	ei := ioctl.MemGetExtendedInfo{MemHandle: host, Version: 99}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemGetExtendedInfo, &ei)
	expectErrno(t, "MEM_GET_EXTENDED_INFO", r, e, 0, 0)
	if ei.HostMemory != 1 || ei.PA != hostPA || ei.MmapOffset != hostPA || ei.Size != 8192 || ei.PID != uint64(os.Getpid()) || ei.MemHandle == host {
		t.Errorf("extended info %+v", ei)
	}
	ei = ioctl.MemGetExtendedInfo{MemHandle: 999}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemGetExtendedInfo, &ei)
	expectErrno(t, "MEM_GET_EXTENDED_INFO bad handle (positive 22)", r, e, 22, 0)

	// MC_GET_INFO finds the chunk containing an address; V2 adds a handle.
	mc := ioctl.MemGetMCMmapInfo{PA: devPA + 12345}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemMCGetInfo, &mc)
	expectErrno(t, "MEM_MC_GET_INFO", r, e, 0, 0)
	if mc.MmapOffset != devPA || mc.Size != 3<<20 {
		t.Errorf("MC_GET_INFO %+v", mc)
	}
	mc2 := ioctl.MemGetMCMmapInfoV2{PA: hostPA}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemMCGetInfoV2, &mc2)
	expectErrno(t, "MEM_MC_GET_INFO_V2", r, e, 0, 0)
	if mc2.MemHandle != host || mc2.MmapOffset != hostPA {
		t.Errorf("MC_GET_INFO_V2 %+v", mc2)
	}
	mc.PA = sys.Arch.HBMBases[2] + 1<<30
	r, e = testutil.Ioctl(fd, ioctl.CmdMemMCGetInfo, &mc)
	expectErrno(t, "MEM_MC_GET_INFO of free memory", r, e, 0, unix.ENOMEM)

	// The 32-bit MEM_BUF_COPY, MEMSET and MEM_COPY.
	copy(mem[4096:], "legacy copy in")
	bc := ioctl.MemBufCopy{MemHandle: dev, Buffer: addr + 4096, Size: 14, Offset: 100, CopyToMemHandle: 1}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufCopy, &bc)
	expectErrno(t, "MEM_BUF_COPY in", r, e, 0, 0)
	ms := ioctl.Memset{MemHandle: dev, Offset: 104, Value: 0x1278, Size: 3}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemset, &ms)
	expectErrno(t, "MEMSET", r, e, 0, 0)
	cp := ioctl.MemCopy{SrcMemHandle: dev, DstMemHandle: host, Size: 14, SrcOffset: 100, DstOffset: 7}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemCopy, &cp)
	expectErrno(t, "MEM_COPY", r, e, 0, 0)
	bc = ioctl.MemBufCopy{MemHandle: host, Buffer: addr + 8192, Size: 14, Offset: 7}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufCopy, &bc)
	expectErrno(t, "MEM_BUF_COPY out", r, e, 0, 0)
	if got := string(mem[8192 : 8192+14]); got != "legaxxxcopy in" {
		t.Errorf("after memset (low byte 0x78 = 'x') and copies: %q", got)
	}
	// Out of bounds and bad handles.
	bc = ioctl.MemBufCopy{MemHandle: host, Buffer: addr, Size: 8000, Offset: 193}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufCopy, &bc)
	expectErrno(t, "MEM_BUF_COPY past the chunk", r, e, 0, unix.EINVAL)
	cp.SrcMemHandle = 77
	r, e = testutil.Ioctl(fd, ioctl.CmdMemCopy, &cp)
	expectErrno(t, "MEM_COPY bad handle", r, e, 0, unix.EINVAL)
	// A user buffer that runs into unmapped memory: the host path returns
	// what copy_from_user could not copy.
	bc64 := ioctl.MemBufCopy64{MemHandle: host, Buffer: 16, Size: 100, CopyToMemHandle: 1}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemBufCopy64, &bc64)
	expectErrno(t, "MEM_BUF_COPY64 from an unmapped buffer", r, e, 100, 0)

	// DUMP_MEM_CHUNKS is two-pass.
	dump := ioctl.DumpMemChunks{HBMIndex: 0, NumEntriesIn: 0, Data: addr + 16384}
	r, e = testutil.Ioctl(fd, ioctl.CmdDumpMemChunks, &dump)
	expectErrno(t, "DUMP_MEM_CHUNKS count", r, e, 0, unix.EAGAIN)
	if dump.NumEntriesOut != 2 {
		t.Fatalf("channel 0 has %d chunks, want 2 (carve-out and the V2MT one)", dump.NumEntriesOut)
	}
	dump.NumEntriesIn = dump.NumEntriesOut
	r, e = testutil.Ioctl(fd, ioctl.CmdDumpMemChunks, &dump)
	expectErrno(t, "DUMP_MEM_CHUNKS records", r, e, 0, 0)
	first, _ := ioctl.Decode[ioctl.MemChunkInfo](mem[16384:])
	second, _ := ioctl.Decode[ioctl.MemChunkInfo](mem[16384+24:])
	if first.PA != 0 || first.Size != 16<<20 || second.Size != 4096 || second.MemType != ioctl.MemTypeConstantsDevice {
		t.Errorf("chunks %+v %+v", first, second)
	}

	// A handle that cannot be written back: the allocation is undone.
	bad := ioctl.MemAllocV2MemType64{Size: 1 << 20, MemHandle: 24}
	r, e = testutil.Ioctl(fd, ioctl.CmdMemAllocV2MT64, &bad)
	expectErrno(t, "MEM_ALLOC_V2MT64 with a bad handle pointer", r, e, 8, 0)
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/memory_usage/device_mem/uncategorized/total"); got != 0 {
		t.Errorf("rolled-back allocation still counted: %d", got)
	}

	for _, h := range []uint64{host, dev, handleAt(16)} {
		f := ioctl.MemFree{MemHandle: h}
		r, e = testutil.Ioctl(fd, ioctl.CmdMemFree, &f)
		expectErrno(t, "MEM_FREE", r, e, 0, 0)
	}
	for _, p := range []string{"neuron_core2/stats/memory_usage/device_mem/total", "neuron_core0/stats/memory_usage/host_mem/total", "stats/memory_usage/host_mem/uncategorized/total"} {
		if got := testutil.DeviceCounter(t, dir, 0, p); got != 0 {
			t.Errorf("%s = %d after freeing everything", p, got)
		}
	}
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core2/stats/memory_usage/device_mem/peak"); got != 3<<20 {
		t.Errorf("device_mem peak %d, want 3 MiB", got)
	}
}

// helperAlloc allocates in a helper process and reports the handle; the
// helper then waits for stdin to close (or to be killed).
var _ = func() bool {
	helpers["alloc"] = func() int {
		d, err := runtime.Host{Root: os.Getenv("NEURONFS_ROOT")}.Open(0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		var handles []string
		for _, o := range []runtime.AllocOptions{{Channel: 1}, {Host: true}} {
			m, err := d.Alloc(64<<20, o)
			if err != nil {
				fmt.Println("err", err)
				return 1
			}
			m.Fill(0, 64<<20, 0x5a)
			handles = append(handles, strconv.FormatUint(m.Handle, 10))
		}
		fmt.Println(strings.Join(handles, " "))
		bufio.NewReader(os.Stdin).ReadString('\n')
		return 0
	}
	return true
}()

// startAllocHelper starts the "alloc" helper on the mount at dir and
// returns it with the handles it allocated (device channel 1, host).
func startAllocHelper(t *testing.T, dir string) (*exec.Cmd, []uint64, io.WriteCloser) {
	t.Helper()
	cmd := helperCmd(t, "alloc", "NEURONFS_ROOT="+dir)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	var hs []uint64
	for _, f := range strings.Fields(line) {
		h, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("helper: %q", line)
		}
		hs = append(hs, h)
	}
	if len(hs) != 2 {
		t.Fatalf("helper said %q", line)
	}
	return cmd, hs, in
}

// Handles are per device: another process may read and free them, as on
// the driver. A process that dies frees exactly its own memory.
func TestMemoryOwnershipAndDeath(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.32xlarge")
	start := func() (*exec.Cmd, []uint64, io.WriteCloser) { return startAllocHelper(t, dir) }

	// This process keeps its own chunk throughout.
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mine, err := d.Alloc(1<<20, runtime.AllocOptions{Channel: 0})
	if err != nil {
		t.Fatal(err)
	}
	base := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/memory_usage/device_mem/total")

	a, hs, ain := start()
	defer ain.Close()
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/memory_usage/device_mem/total"); got != base+64<<20 {
		t.Fatalf("device_mem total %d with the helper's 64 MiB, want %d", got, base+64<<20)
	}
	// B (this process) reads A's chunk through A's handle.
	buf := make([]byte, 16)
	v := ioctl.MemBufCopy64{MemHandle: hs[0], Buffer: uint64(uintptr(unsafe.Pointer(&buf[0]))), Size: 16}
	if r, e := testutil.Ioctl(d.Fd(), ioctl.CmdMemBufCopy64, &v); r != 0 || e != 0 || buf[0] != 0x5a || buf[15] != 0x5a {
		t.Fatalf("reading another process's chunk: %d %v % x", r, e, buf)
	}
	// A is killed: its memory goes, this process's stays.
	a.Process.Kill()
	a.Wait()
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/memory_usage/device_mem/total"); got != base {
		t.Errorf("device_mem total %d after the owner died, want %d", got, base)
	}
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/memory_usage/host_mem/total"); got != 0 {
		t.Errorf("host_mem total %d after the owner died", got)
	}
	if _, err := mine.Info(); err != nil {
		t.Errorf("this process's chunk went with the other's death: %v", err)
	}

	// B frees A's handle while A lives, as the driver allows.
	a2, hs2, a2in := start()
	defer func() { a2in.Close(); a2.Wait() }()
	f := ioctl.MemFree{MemHandle: hs2[1]}
	if r, e := testutil.Ioctl(d.Fd(), ioctl.CmdMemFree, &f); r != 0 || e != 0 {
		t.Fatalf("freeing another process's handle: %d %v", r, e)
	}
}

// RSS follows live allocations: 16 Trn2 devices declare 1.5 TiB, and
// touching then freeing 1 GiB returns the daemon to where it was.
func TestMemoryReturnsToHost(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	if len(sys.Devices) != 16 {
		t.Fatalf("%d devices", len(sys.Devices))
	}
	d, err := runtime.Host{Root: dir}.Open(5)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := rssKiB(t)
	var ms []*runtime.Mem
	for ch := uint32(0); ch < 4; ch++ {
		m, err := d.Alloc(256<<20, runtime.AllocOptions{Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Fill(0, 256<<20, 0xee); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	touched := rssKiB(t)
	if touched < before+768<<10 {
		t.Fatalf("RSS %d KiB -> %d KiB after touching 1 GiB: memory not where expected", before, touched)
	}
	for _, m := range ms {
		m.Free()
	}
	after := rssKiB(t)
	if after > before+64<<10 {
		t.Fatalf("RSS %d KiB after freeing, started at %d KiB (more than 64 MiB kept)", after, before)
	}
}

func rssKiB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// With --strict, using another process's chunk is refused unless it was
// handed over with MEM_MC_GET_INFO_V2.
func TestMemoryStrictMode(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", Strict: true})
	a, hs, ain := startAllocHelper(t, dir)
	defer func() { ain.Close(); a.Wait() }()
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	buf := make([]byte, 16)
	read := ioctl.MemBufCopy64{MemHandle: hs[0], Buffer: uint64(uintptr(unsafe.Pointer(&buf[0]))), Size: 16}
	r, e := testutil.Ioctl(d.Fd(), ioctl.CmdMemBufCopy64, &read)
	expectErrno(t, "strict: read another process's chunk", r, e, 0, unix.EPERM)
	f := ioctl.MemFree{MemHandle: hs[1]}
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdMemFree, &f)
	expectErrno(t, "strict: free another process's chunk", r, e, 0, unix.EPERM)
	// Handed over by address: now allowed.
	var info ioctl.MemGetExtendedInfo
	info.MemHandle = hs[0]
	testutil.Ioctl(d.Fd(), ioctl.CmdMemGetExtendedInfo, &info)
	mc := ioctl.MemGetMCMmapInfoV2{PA: info.PA}
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdMemMCGetInfoV2, &mc)
	expectErrno(t, "MC_GET_INFO_V2", r, e, 0, 0)
	r, e = testutil.Ioctl(d.Fd(), ioctl.CmdMemBufCopy64, &read)
	expectErrno(t, "strict: read a chunk handed over", r, e, 0, 0)
	if buf[0] != 0x5a {
		t.Fatalf("read % x", buf)
	}
}
