package chardev

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkOpenMem measures what pinning a caller costs each supervised
// ioctl: an open and a close of its /proc/TID/mem.
func BenchmarkOpenMem(b *testing.B) {
	tid := uint32(unix.Gettid())
	for b.Loop() {
		fd, err := openMem(tid)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
