package fs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrMmapNotCoherent means a client's mmap of a device node is not the
// daemon's memory: FUSE passthrough is missing (kernel < 6.9, no
// CAP_SYS_ADMIN) and the kernel fell back to page-cache mmap, whose writes
// reach the daemon late or never.
var ErrMmapNotCoherent = errors.New("mmap of device nodes is not coherent with the device memory (FUSE passthrough unavailable)")

// checkMmapCoherence maps a page of neuron0 like a client would and checks
// that writes on either side are seen on the other at once. It uses the
// last page of the host-memory range, which no allocation can reach.
func (f *FS) checkMmapCoherence(dir string) error {
	if len(f.sys.Devices) == 0 {
		return nil
	}
	d := f.sys.Devices[0]
	pa := f.sys.Arch.HostBase + (1 << 32) - 4096
	daemon, err := d.Chip().PhysView(pa, 4096)
	if err != nil {
		return err
	}
	fd, err := f.openSelf(filepath.Join(dir, DevDir, d.Name()))
	if err != nil {
		return fmt.Errorf("self-test open: %w", err)
	}
	defer unix.Close(fd)
	if f.selfTestHold != nil {
		f.selfTestHold()
	}
	client, err := unix.Mmap(fd, int64(pa), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("self-test mmap: %w (%w)", err, ErrMmapNotCoherent)
	}
	defer unix.Munmap(client)
	mark := []byte(fmt.Sprintf("neuronfs-%d", os.Getpid()))
	copy(client, mark)
	seen := bytes.Equal(daemon[:len(mark)], mark)
	copy(daemon[64:], mark)
	back := bytes.Equal(client[64:64+len(mark)], mark)
	clear(daemon[:128])
	if !seen || !back {
		return ErrMmapNotCoherent
	}
	return nil
}

// openSelf opens one of the daemon's own device nodes marked as its own
// (devNode.Open answers it without FLUSH). A daemon SIGKILLed while it
// holds such a file closes it on exit; a FLUSH would go to the server
// that is dying with it (over io_uring, onto a ring only the dying
// thread could deliver), and the exit would wait for good in D state.
func (f *FS) openSelf(path string) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f.selfTestTid.Store(int32(unix.Gettid()))
	defer f.selfTestTid.Store(0)
	return unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
}
