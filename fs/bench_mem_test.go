package fs_test

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// Bandwidth sizes; 4 KiB copies are a latency question (BenchmarkRoundTrip).
var copySizes = []int{1 << 20, 64 << 20}

// BenchmarkCopy compares MEM_BUF_COPY64 host buffer -> device chunk with
// process_vm_readv of the same size (`benchstat -col /impl`).
func BenchmarkCopy(b *testing.B) {
	for _, size := range copySizes {
		b.Run(fmt.Sprintf("size=%d/impl=process_vm_readv", size), func(b *testing.B) { benchProcessVMReadv(b, size) })
		b.Run(fmt.Sprintf("size=%d/impl=MEM_BUF_COPY64", size), func(b *testing.B) { benchBufCopy(b, size, device.Backing{}) })
		b.Run(fmt.Sprintf("size=%d/impl=MEM_BUF_COPY64-file", size), func(b *testing.B) { benchBufCopy(b, size, fileBacking(b)) })
	}
}

// fileBacking is the file backing in the test's directory (on ext4, through the compact store).
func fileBacking(b *testing.B) device.Backing {
	return device.Backing{Dir: b.TempDir()}
}

// mountBacking mounts a trn2.48xlarge whose memory lives on backing.
func mountBacking(b *testing.B, backing device.Backing) string {
	b.Setenv(device.BackingEnv, "")
	return testutil.StartDaemon(b, device.Config{Instance: "trn2.48xlarge", Backing: backing}).Dir
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

func benchBufCopy(b *testing.B, size int, backing device.Backing) {
	dir := mountBacking(b, backing)
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
	b.Run("impl=device-mmap", func(b *testing.B) { benchMappedChunk(b, src, device.Backing{}) })
	b.Run("impl=device-mmap-file", func(b *testing.B) { benchMappedChunk(b, src, fileBacking(b)) })
}

func benchMappedChunk(b *testing.B, src []byte, backing device.Backing) {
	d, err := runtime.Host{Root: mountBacking(b, backing)}.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	m, err := d.Alloc(uint64(len(src)), runtime.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dst, err := m.Map()
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(dst)
	memcpyLoop(b, dst, src)
}
