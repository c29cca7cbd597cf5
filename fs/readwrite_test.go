package fs_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// read(2) and write(2) on a device file fail with EINVAL, as on the
// driver, which registers neither: passthrough serves mmap only, never
// the device's physical memory through a file offset.
func TestDeviceReadWriteRefused(t *testing.T) {
	testutil.RequireFUSE(t)
	dir, _ := testutil.Mount(t, "inf2.xlarge")
	fd, err := unix.Open(filepath.Join(dir, "dev", "neuron0"), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 64)
	for _, x := range []struct {
		name string
		call func() (int, error)
	}{
		{"read", func() (int, error) { return unix.Read(fd, buf) }},
		{"pread", func() (int, error) { return unix.Pread(fd, buf, 0) }},
		{"write", func() (int, error) { return unix.Write(fd, buf) }},
		{"pwrite", func() (int, error) { return unix.Pwrite(fd, buf, 4096) }},
	} {
		if n, err := x.call(); err != unix.EINVAL {
			t.Errorf("%s: %d %v, want EINVAL", x.name, n, err)
		}
	}
}
