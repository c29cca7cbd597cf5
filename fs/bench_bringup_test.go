package fs_test

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// BenchmarkBARWriteUcode times one NeuronCore's Q7 microcode install in
// the runtime's call shape: per Q7 core one BAR_WRITE of its DRAM
// aperture then one of its IRAM aperture, one address per word (trn2:
// 8 × (64 Ki + 32 Ki) words, about 0.8 M), against its floor: the
// daemon's two process_vm_readv of the same address and data arrays
// per call (`benchstat -col /impl`).
func BenchmarkBARWriteUcode(b *testing.B) {
	dir, sys := testutil.Mount(b, "trn2.48xlarge")
	f := sys.Arch
	g := f.Q7Pool()
	fd := openDevB(b, dir, 0)
	var info ioctl.DeviceInfo
	if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info); e != 0 {
		b.Fatalf("DEVICE_INFO: %v", e)
	}
	type call struct{ addrs, data []byte }
	var calls []call
	words := 0
	stage := func(off uint64, n int) {
		a, err := testutil.OffHeap(8 * n)
		if err != nil {
			b.Fatal(err)
		}
		d, err := testutil.OffHeap(4 * n)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Munmap(a); unix.Munmap(d) })
		for i := range n {
			binary.LittleEndian.PutUint64(a[8*i:], info.BARAddress[0]+off+4*uint64(i))
			binary.LittleEndian.PutUint32(d[4*i:], uint32(i)*0x9e3779b1)
		}
		calls = append(calls, call{a, d})
		words += n
	}
	tpb := f.TPBBase(1)
	for i := range g.Cores {
		stage(tpb+g.DRAMOffset(i), int(g.DRAM/4))
		stage(tpb+g.IRAMOffset(i), int(g.IRAM/4))
	}
	b.Run("impl=process_vm_readv", func(b *testing.B) {
		var dst []call
		for _, c := range calls {
			dst = append(dst, call{make([]byte, len(c.addrs)), make([]byte, len(c.data))})
		}
		b.SetBytes(int64(12 * words))
		for b.Loop() {
			for i, c := range calls {
				if err := testutil.ReadvSelf(dst[i].addrs, c.addrs); err != nil {
					b.Fatal(err)
				}
				if err := testutil.ReadvSelf(dst[i].data, c.data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("impl=BAR_WRITE", func(b *testing.B) {
		b.SetBytes(int64(12 * words))
		for b.Loop() {
			for _, c := range calls {
				v := ioctl.BARRW{Count: uint32(len(c.data) / 4), Address: uint64(testutil.AddrOf(c.addrs)), Data: uint64(testutil.AddrOf(c.data))}
				if r, e := testutil.Ioctl(fd, ioctl.CmdBARWrite, &v); r != 0 || e != 0 {
					b.Fatalf("BAR_WRITE: %d %v", r, e)
				}
			}
		}
	})
}

// openDevB opens /dev/neuronN read-write for a benchmark.
func openDevB(b *testing.B, dir string, i int) int {
	b.Helper()
	fd, err := unix.Open(dir+"/dev/neuron"+string(rune('0'+i)), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	return fd
}
