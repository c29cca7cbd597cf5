package spacefs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkMappedRewrite rewrites a 256 MiB mapping of a space again and
// again, as a client rewrites device memory, against anonymous shared
// memory: with the dirty-page limit the daemon lifts as root, and with
// the kernel's strict FUSE share that a rootless daemon keeps.
func BenchmarkMappedRewrite(b *testing.B) {
	const size = 256 << 20
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	b.Run("impl=anon-shared", func(b *testing.B) {
		m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(m)
		rewrite(b, m, src)
	})
	for _, strict := range []bool{false, true} {
		name := "impl=store-lifted"
		if strict {
			name = "impl=store-strict"
		}
		b.Run(name, func(b *testing.B) {
			s := startServer(b)
			fd, err := s.Create("neuron0", 1<<47)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Close(fd)
			if strict {
				setDirtyLimit(b, fd, "1", "1")
			}
			m, err := unix.Mmap(fd, 1<<46, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Munmap(m)
			rewrite(b, m, src)
		})
	}
}

// rewrite times copies of src over m after one that brings the pages in.
func rewrite(b *testing.B, m, src []byte) {
	copy(m, src)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for b.Loop() {
		copy(m, src)
	}
}

// setDirtyLimit puts back the kernel's FUSE defaults on fd's filesystem.
func setDirtyLimit(b *testing.B, fd int, strict, ratio string) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		b.Fatal(err)
	}
	bdi := bdiDir(st.Dev) + "/"
	if err := os.WriteFile(bdi+"max_ratio", []byte(ratio), 0); err != nil {
		b.Skipf("cannot set the dirty limit: %v", err)
	}
	if err := os.WriteFile(bdi+"strict_limit", []byte(strict), 0); err != nil {
		b.Skipf("cannot set the dirty limit: %v", err)
	}
}
