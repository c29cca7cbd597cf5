package fs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
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
		RawIO:  hasCap(tid, unix.CAP_SYS_RAWIO),
	})
}

// hasCap reports whether task tid has capability c in its effective set.
func hasCap(tid int32, c int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return false
	}
	i := bytes.Index(b, []byte("\nCapEff:"))
	if i < 0 {
		return false
	}
	line := b[i+len("\nCapEff:"):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 64)
	return err == nil && v&(1<<uint(c)) != 0
}
