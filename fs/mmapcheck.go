package fs

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
)

// CheckMmap answers, for the seccomp supervisor of `run`, whether the
// driver would let task tid map [off, off+length) of device i with prot:
// 0 to let the mmap go ahead, or the errno to fail it with.
func (f *FS) CheckMmap(i int, tid int32, off, length uint64, prot int) syscall.Errno {
	if i < 0 || i >= len(f.sys.Devices) {
		return syscall.ENODEV
	}
	return f.sys.Devices[i].CheckMapping(device.Mapping{
		Tgid:   f.tgids.lookup(tid),
		Offset: off,
		Length: length,
		Write:  prot&unix.PROT_WRITE != 0,
		RawIO:  capable(tid, unix.CAP_SYS_RAWIO),
	})
}
