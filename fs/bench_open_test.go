package fs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// BenchmarkOpenClose: open a device node write-only (the misc fd, which
// never attaches) and close it. The open and the close's flush are
// requests that may wait, which io_uring serves on a worker goroutine: this
// is the cost of that hand-off, next to the classic loop.
func BenchmarkOpenClose(b *testing.B) {
	dir, _ := testutil.Mount(b, "trn2.48xlarge")
	path := dir + "/dev/neuron0"
	for b.Loop() {
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Close(fd); err != nil {
			b.Fatal(err)
		}
	}
}
