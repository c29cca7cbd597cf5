package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

func newVersionSystem(t *testing.T, instance, version string) *System {
	t.Helper()
	s, err := NewSystem(Config{Instance: instance, DriverVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Driver 2.28's allocation that answers the physical address.
func TestMemAllocWithPA(t *testing.T) {
	d := newVersionSystem(t, "trn2.3xlarge", "2.28.0.0").Devices[0]
	f := open(t, d, syscall.O_RDWR, 100)
	ctx := context.Background()
	for _, host := range []uint32{0, 1} {
		m := &fakeMemory{base: 0x10000, mem: make([]byte, 128)}
		v := ioctl.MemAllocV2MemType64PA{Size: 1 << 20, HostMemory: host, MemType: ioctl.MemTypeTensorsDevice, MemHandle: m.base + 64}
		copy(m.mem, ioctl.Bytes(&v))
		r := &Request{Ctx: ctx, File: f, Cmd: ioctl.CmdMemAllocV2MT64PA, Arg: m.base, Caller: Caller{Tid: 100, Tgid: 100}, Mem: m}
		if res := d.sys.Ioctl(r); res != 0 {
			t.Fatalf("host %d: result %d", host, res)
		}
		out, _ := ioctl.Decode[ioctl.MemAllocV2MemType64PA](m.mem)
		h, _ := ioctl.Decode[uint64](m.mem[64:])
		c, err := d.mem.pool.Lookup(h)
		if err != nil {
			t.Fatalf("host %d: handle %d: %v", host, h, err)
		}
		want := c.PA
		if host != 0 {
			want |= d.sys.Arch.HostBase
		}
		if out.PA != want {
			t.Errorf("host %d: pa %#x, want %#x", host, out.PA, want)
		}
	}
	// 2.27 does not have it.
	d27 := newVersionSystem(t, "trn2.3xlarge", "2.27.4.0").Devices[0]
	res, _ := call(t, ctx, open(t, d27, syscall.O_RDWR, 100), 100, ioctl.CmdMemAllocV2MT64PA, ioctl.MemAllocV2MemType64PA{Size: 4096})
	wantErrno(t, "2.27 V2MT64_PA", res, syscall.EINVAL)
}

// Pins: per process, refused when they overlap, removed by exact start,
// gone when the process detaches from its last device.
func TestHostMemPin(t *testing.T) {
	s := newVersionSystem(t, "trn2.48xlarge", "2.28.0.0")
	ctx := context.Background()
	f := open(t, s.Devices[0], syscall.O_RDWR, 100)
	g := open(t, s.Devices[1], syscall.O_RDWR, 100)
	pin := func(va, size uint64) Result {
		m := &fakeMemory{base: 0x10000, mem: make([]byte, 1<<20)}
		v := ioctl.HostMemPin{VA: va, Size: size}
		copy(m.mem, ioctl.Bytes(&v))
		r := &Request{Ctx: ctx, File: f, Cmd: ioctl.CmdHostMemPin, Arg: m.base, Caller: Caller{Tid: 100, Tgid: 100}, Mem: m}
		res := s.Ioctl(r)
		if out, _ := ioctl.Decode[ioctl.HostMemPin](m.mem); res == 0 && out.PA != noPA {
			t.Errorf("pin answered pa %#x", out.PA)
		}
		return res
	}
	wantErrno(t, "pin of nothing", pin(0x10000, 0), syscall.EINVAL)
	wantErrno(t, "pin of unmapped memory", pin(0x7f0000000000, 4096), syscall.EFAULT)
	wantErrno(t, "pin", pin(0x10000+4096, 8192), 0)
	wantErrno(t, "overlapping pin", pin(0x10000+8192, 8192), syscall.EEXIST)
	wantErrno(t, "adjacent pin", pin(0x10000+3*4096, 4096), 0)
	res, _ := call(t, ctx, f, 100, ioctl.CmdHostMemUnpin, ioctl.HostMemUnpin{VA: 0x10000 + 4097})
	wantErrno(t, "unpin inside a range", res, syscall.ENOENT)
	res, _ = call(t, ctx, f, 100, ioctl.CmdHostMemUnpin, ioctl.HostMemUnpin{VA: 0x10000 + 4096})
	wantErrno(t, "unpin", res, 0)
	if n := s.pins.count(100); n != 1 {
		t.Fatalf("%d pins left, want 1", n)
	}
	f.Flush(ctx, Caller{Tgid: 100})
	if n := s.pins.count(100); n != 1 {
		t.Fatalf("pins dropped while still attached elsewhere: %d", n)
	}
	g.Flush(ctx, Caller{Tgid: 100})
	if n := s.pins.count(100); n != 0 {
		t.Fatalf("%d pins left after the last detach", n)
	}
}

// Driver 2.29's errnos against 2.25's, for the same requests.
func TestErrnos2_29(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		version                      string
		badHandle, outOfRange, fault syscall.Errno
		faultCount                   bool
	}{
		{"2.25.4.0", syscall.EINVAL, syscall.EINVAL, 0, true},
		{"2.29.0.0", syscall.ENOENT, syscall.E2BIG, syscall.EFAULT, false},
	} {
		d := newVersionSystem(t, "trn2.3xlarge", c.version).Devices[0]
		f := open(t, d, syscall.O_RDWR, 100)
		res, _ := call(t, ctx, f, 100, ioctl.CmdMemFree, ioctl.MemFree{MemHandle: 999})
		wantErrno(t, c.version+" MEM_FREE of an unknown handle", res, c.badHandle)
		h := allocTest(t, f, 4096)
		res, _ = call(t, ctx, f, 100, ioctl.CmdMemset64, ioctl.Memset64{MemHandle: h, Offset: 4000, Size: 200})
		wantErrno(t, c.version+" MEMSET past the chunk", res, c.outOfRange)
		res, _ = call(t, ctx, f, 100, ioctl.CmdMemCopy64, ioctl.MemCopy64{SrcMemHandle: h, DstMemHandle: 12345, Size: 8})
		wantErrno(t, c.version+" MEM_COPY64 to an unknown handle", res, c.badHandle)
		// A buffer copy from unmapped user memory.
		res, _ = call(t, ctx, f, 100, ioctl.CmdMemBufCopy64, ioctl.MemBufCopy64{MemHandle: h, Buffer: 0x7f0000000000, Size: 64, CopyToMemHandle: 1})
		if c.faultCount {
			if res <= 0 {
				t.Errorf("%s: faulting buffer copy answered %d, want a not-copied count", c.version, res)
			}
		} else {
			wantErrno(t, c.version+" faulting buffer copy", res, c.fault)
		}
		// DMA_COPY_DESCRIPTORS keeps EINVAL in both.
		res, _ = call(t, ctx, f, 100, ioctl.CmdDMACopyDescriptors64, ioctl.DMACopyDescriptors64{MemHandle: 999, NumDescs: 1})
		wantErrno(t, c.version+" DMA_COPY_DESCRIPTORS64 of an unknown handle", res, syscall.EINVAL)
		// DMABUF_FD without an fd pointer.
		res, _ = call(t, ctx, f, 100, ioctl.CmdDMABufFD, ioctl.DMABufFD{VA: 4096, Size: 4096})
		want := syscall.EPROTONOSUPPORT
		if c.version == "2.29.0.0" {
			want = syscall.EINVAL
		}
		wantErrno(t, c.version+" DMABUF_FD without an fd pointer", res, want)
	}
}

// 2.29's zero copy takes 64 bytes; the 48-byte value is refused.
func TestZeroCopy2_29(t *testing.T) {
	ctx := context.Background()
	d := newVersionSystem(t, "trn2.3xlarge", "2.29.0.0").Devices[0]
	f := open(t, d, syscall.O_RDWR, 100)
	tab := d.sys.Table
	zc, ok := tab.ByName("NEURON_IOCTL_MEM_BUF_ZEROCOPY64")
	if !ok || zc.Cmd != 0xc0404e7c || zc.ArgSize != 64 {
		t.Fatalf("2.29 zero copy: %+v", zc)
	}
	old, ok := tab.ByName("NEURON_IOCTL_MEM_BUF_ZEROCOPY64_DEPRECATED")
	if !ok || old.Cmd != ioctl.CmdMemBufZerocopy64 {
		t.Fatalf("2.29 deprecated zero copy: %+v", old)
	}
	h := allocTest(t, f, 4096)
	res, _ := call(t, ctx, f, 100, old.Cmd, ioctl.MemBufCopy64ZC{MemHandle: h, Size: 8})
	wantErrno(t, "48-byte zero copy on 2.29", res, syscall.EINVAL)
	res, _ = call(t, ctx, f, 100, zc.Cmd, ioctl.MemBufCopy64ZCV2_29_0_0{MemHandle: 999, Size: 8})
	wantErrno(t, "64-byte zero copy of an unknown handle", res, syscall.EINVAL) // not the memory commands' ENOENT
	if got := tab.FeaturesFor(2); got != 0x7ff {
		t.Errorf("V2 features %#x", got)
	}
	if got := tab.FeaturesFor(3); got != 0xfff {
		t.Errorf("V3 features %#x", got)
	}
}

// allocTest allocates a device chunk for tgid 100 and returns its handle.
func allocTest(t *testing.T, f *File, size uint64) uint64 {
	t.Helper()
	m := &fakeMemory{base: 0x10000, mem: make([]byte, 128)}
	v := ioctl.MemAllocV2{Size: size, MemHandle: m.base + 64}
	copy(m.mem, ioctl.Bytes(&v))
	r := &Request{Ctx: context.Background(), File: f, Cmd: ioctl.CmdMemAllocV2, Arg: m.base, Caller: Caller{Tid: 100, Tgid: 100}, Mem: m}
	if res := f.Dev.sys.Ioctl(r); res != 0 {
		t.Fatalf("alloc: %d", res)
	}
	h, _ := ioctl.Decode[uint64](m.mem[64:])
	return h
}
