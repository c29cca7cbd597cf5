package device

import (
	"context"
	"encoding/binary"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// fakeMemory is a caller address space with one mapped region.
type fakeMemory struct {
	base uint64
	mem  []byte
}

func (m *fakeMemory) span(addr uint64, n int) (int, int) {
	if addr < m.base || addr-m.base >= uint64(len(m.mem)) {
		return 0, 0
	}
	off := int(addr - m.base)
	return off, min(n, len(m.mem)-off)
}

func (m *fakeMemory) ReadAt(p []byte, addr uint64) (int, error) {
	off, n := m.span(addr, len(p))
	copy(p, m.mem[off:off+n])
	if n < len(p) {
		return n, syscall.EFAULT
	}
	return n, nil
}

func (m *fakeMemory) WriteAt(p []byte, addr uint64) (int, error) {
	off, n := m.span(addr, len(p))
	copy(m.mem[off:off+n], p)
	if n < len(p) {
		return n, syscall.EFAULT
	}
	return n, nil
}

// fuzzMaps pretends every address is a mapping of device va%4 at offset
// va, one page long.
type fuzzMaps struct{}

func (fuzzMaps) MappingAt(_ int32, va uint64) (UserMapping, bool) {
	return UserMapping{Device: int(va % 4), Start: va, Length: 4096, Offset: va}, true
}

// FuzzIoctl feeds arbitrary commands and argument memory to every handler:
// nothing may panic, and every answer is a count or an errno FUSE can
// deliver.
func FuzzIoctl(f *testing.F) {
	newest, err := ioctl.ForVersion("2.27.4.0")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range newest.Commands() {
		size := max(c.ArgSize, 8)
		f.Add(c.Cmd, make([]byte, size), uint64(0), false)
		f.Add(c.Cmd, make([]byte, size), uint64(0), true)
	}
	// A struct whose nested pointer points back into the region.
	nested := make([]byte, 64)
	binary.LittleEndian.PutUint64(nested[0:], 0x10000+16)
	binary.LittleEndian.PutUint32(nested[8:], 8)
	f.Add(ioctl.CmdGetLogicalToPhysicalNCMap, nested, uint64(0), false)
	f.Add(ioctl.CmdPrintk, nested, uint64(0), true)
	// Allocation structs whose handle pointer points back into the region.
	alloc := make([]byte, 64)
	binary.LittleEndian.PutUint64(alloc[0:], 1<<20)
	binary.LittleEndian.PutUint64(alloc[40:], 0x10000+56)
	f.Add(ioctl.CmdMemAllocV2MT64, alloc, uint64(0), false)
	f.Add(ioctl.CmdMemAllocV2MT, alloc, uint64(0), false)

	// Every input goes to the default driver and to the newest, which has
	// nine more commands and other errnos.
	type target struct {
		sys            *System
		dev            *Device
		attached, free *File
	}
	var targets []target
	for _, version := range []string{ioctl.DefaultVersion, ioctl.Versions()[0]} {
		// The systems live across inputs, and fuzzed copies and memsets
		// write gigabytes: a 1 GiB limit keeps the host's memory, and each
		// input's time, bounded (writes past it fail as the driver's would).
		sys, err := NewSystem(Config{Instance: "trn2.48xlarge", DriverVersion: version, MemoryLimit: 1 << 30})
		if err != nil {
			f.Fatal(err)
		}
		dev := sys.Devices[3]
		attached, errno := dev.Open(context.Background(), Caller{Tgid: 100}, syscall.O_RDWR)
		if errno != 0 {
			f.Fatal(errno)
		}
		free, _ := dev.Open(context.Background(), Caller{Tgid: 100}, syscall.O_WRONLY)
		targets = append(targets, target{sys, dev, attached, free})
	}
	f.Fuzz(func(t *testing.T, cmd uint32, mem []byte, argOffset uint64, freeAccess bool) {
		for _, tg := range targets {
			serveFuzzed(t, tg.sys, tg.dev, tg.attached, tg.free, cmd, mem, argOffset, freeAccess)
		}
	})
}

// serveFuzzed runs one fuzzed request on sys and checks the answer.
func serveFuzzed(t *testing.T, sys *System, dev *Device, attached, free *File, cmd uint32, input []byte, argOffset uint64, freeAccess bool) {
	mem := append([]byte(nil), input...)
	m := &fakeMemory{base: 0x10000, mem: mem}
	file := attached
	if freeAccess {
		file = free
	}
	r := &Request{
		Ctx:    context.Background(),
		File:   file,
		Cmd:    cmd,
		Arg:    m.base + argOffset%uint64(len(mem)+16),
		Caller: Caller{Tid: 100, Tgid: 100},
		Mem:    m,
		Maps:   fuzzMaps{},
	}
	if ioctl.Dir(cmd)&ioctl.DirWrite != 0 {
		r.In = make([]byte, ioctl.Size(cmd))
		m.ReadAt(r.In, r.Arg)
	}
	var res Result
	done := make(chan struct{})
	go func() { res = sys.serve(r); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Longer than any wait the driver bounds (core init: 5 s);
		// anything slower is a hang.
		buf := make([]byte, 1<<20)
		t.Fatalf("cmd %#x (nr %d) did not return within 10 s\n%s", cmd, ioctl.Nr(cmd), buf[:runtime.Stack(buf, true)])
	}
	// Nothing an iteration allocates may pile up across iterations.
	for _, c := range dev.mem.pool.FreeExpired(mempool.LifespanCurProcess, 100) {
		dev.mem.discard(c)
	}
	// A failure is a real errno; a positive count never exceeds the
	// bytes a handler could have tried to copy.
	if res < 0 && (-res > 4095) {
		t.Fatalf("cmd %#x: errno %d out of range", cmd, -res)
	}
	// The largest array a handler reads is 2^20 zero-copy batches of
	// 40 bytes.
	if res > 40<<20 {
		t.Fatalf("cmd %#x: result %d", cmd, res)
	}
}
