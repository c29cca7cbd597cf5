package fs_test

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// Bandwidth sizes; 4 KiB copies are a latency question (BenchmarkRoundTrip).
var copySizes = []int{1 << 20, 64 << 20}

// BenchmarkCopy compares MEM_BUF_COPY64 host buffer -> device chunk with
// process_vm_readv of the same size (`benchstat -col /impl`).
func BenchmarkCopy(b *testing.B) {
	for _, size := range copySizes {
		b.Run(fmt.Sprintf("size=%d/impl=process_vm_readv", size), func(b *testing.B) { benchProcessVMReadv(b, size) })
		b.Run(fmt.Sprintf("size=%d/impl=MEM_BUF_COPY64", size), func(b *testing.B) { benchBufCopy(b, size) })
	}
}

func benchProcessVMReadv(b *testing.B, size int) {
	src := make([]byte, size)
	dst := make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		if err := testutil.ReadvSelf(dst, src); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBufCopy(b *testing.B, size int) {
	dir, _ := testutil.Mount(b, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	m, err := d.Alloc(uint64(size), runtime.AllocOptions{Channel: 1})
	if err != nil {
		b.Fatal(err)
	}
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	m.Write(0, src) // fault the device pages in once, as the floor's are
	b.SetBytes(int64(size))
	for b.Loop() {
		if err := m.Write(0, src); err != nil {
			b.Fatal(err)
		}
	}
}

// memcpyLoop times copying src into dst, after one untimed copy that
// faults the pages in.
func memcpyLoop(b *testing.B, dst, src []byte) {
	copy(dst, src)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		copy(dst, src)
	}
}

// BenchmarkMappedMemcpy compares memcpy into an mmap of a device chunk
// with memcpy into anonymous shared memory.
func BenchmarkMappedMemcpy(b *testing.B) {
	const size = 64 << 20
	src := make([]byte, size)
	b.Run("impl=anon-shared", func(b *testing.B) {
		dst, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(dst)
		memcpyLoop(b, dst, src)
	})
	b.Run("impl=device-mmap", func(b *testing.B) {
		dir, _ := testutil.Mount(b, "trn2.48xlarge")
		d, err := runtime.Host{Root: dir}.Open(0)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		m, err := d.Alloc(size, runtime.AllocOptions{})
		if err != nil {
			b.Fatal(err)
		}
		dst, err := m.Map()
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(dst)
		memcpyLoop(b, dst, src)
	})
}
