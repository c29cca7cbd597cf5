package chardev

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"
)

// refusal is a call on a descriptor that a device file fails in the
// kernel (the driver registers no such operation), while the physical-
// memory file behind a direct descriptor would carry it out: read or
// write device memory through a file offset, move the offset, or resize
// or punch the file the daemon maps. With Config.Direct the filter sends
// these calls when a descriptor argument is from FDBase up (those marked
// anyFD whatever the number), and the supervisor answers a device
// descriptor's with the device file's errno.
type refusal struct {
	call   sysCall
	fdArgs []int // the arguments that are descriptors
	// need is the access the kernel checks first (EBADF without it, the
	// same for both files): needNothing, unix.O_RDONLY or unix.O_WRONLY.
	need  int
	errno unix.Errno
	// anyFD: the filter sends the call whatever its descriptor number.
	// A resize or punch of the memory file is what crashes the daemon,
	// and a copy of a device descriptor may sit below FDBase (one
	// received by SCM_RIGHTS).
	anyFD bool
}

const needNothing = -1

// refusals are the calls refused: read and write without the driver's
// read and write (EINVAL), lseek without its llseek (ESPIPE), ftruncate
// of a non-regular file (EINVAL), fallocate of a character device
// (ENODEV), and the splice family without splice operations (EINVAL).
var refusals = []refusal{
	{call: sysRead, fdArgs: []int{0}, need: unix.O_RDONLY, errno: unix.EINVAL},
	{call: sysReadv, fdArgs: []int{0}, need: unix.O_RDONLY, errno: unix.EINVAL},
	{call: sysPread64, fdArgs: []int{0}, need: unix.O_RDONLY, errno: unix.EINVAL},
	{call: sysPreadv, fdArgs: []int{0}, need: unix.O_RDONLY, errno: unix.EINVAL},
	{call: sysPreadv2, fdArgs: []int{0}, need: unix.O_RDONLY, errno: unix.EINVAL},
	{call: sysWrite, fdArgs: []int{0}, need: unix.O_WRONLY, errno: unix.EINVAL},
	{call: sysWritev, fdArgs: []int{0}, need: unix.O_WRONLY, errno: unix.EINVAL},
	{call: sysPwrite64, fdArgs: []int{0}, need: unix.O_WRONLY, errno: unix.EINVAL},
	{call: sysPwritev, fdArgs: []int{0}, need: unix.O_WRONLY, errno: unix.EINVAL},
	{call: sysPwritev2, fdArgs: []int{0}, need: unix.O_WRONLY, errno: unix.EINVAL},
	{call: sysLseek, fdArgs: []int{0}, need: needNothing, errno: unix.ESPIPE},
	{call: sysFtruncate, fdArgs: []int{0}, need: needNothing, errno: unix.EINVAL, anyFD: true},
	{call: sysFallocate, fdArgs: []int{0}, need: unix.O_WRONLY, errno: unix.ENODEV, anyFD: true},
	{call: sysSendfile, fdArgs: []int{0, 1}, need: needNothing, errno: unix.EINVAL},
	{call: sysSplice, fdArgs: []int{0, 2}, need: needNothing, errno: unix.EINVAL},
	{call: sysTee, fdArgs: []int{0, 1}, need: needNothing, errno: unix.EINVAL},
	{call: sysCopyFileRange, fdArgs: []int{0, 2}, need: needNothing, errno: unix.EINVAL},
}

// refusalFor is the refusal of call c, if it is one.
func refusalFor(c sysCall) (*refusal, bool) {
	for i := range refusals {
		if refusals[i].call == c {
			return &refusals[i], true
		}
	}
	return nil, false
}

// handleRefusal answers a refused call on an open of a device's memory
// file (memoryFile) with the device file's errno, and lets every other
// go ahead.
func (s *Supervisor) handleRefusal(n *seccompNotif, r *refusal) {
	if s.direct == nil {
		s.pass(n.ID)
		return
	}
	for _, i := range r.fdArgs {
		fd := int32(n.Data.Args[i])
		if !s.memoryFile(n.Pid, fd) {
			continue
		}
		if r.need != needNothing && !s.hasAccess(n.Pid, fd, r.need) {
			break // the kernel's own EBADF, the same for both files
		}
		if s.valid(n.ID) {
			s.respond(n.ID, -1, r.errno, 0)
		}
		return
	}
	s.pass(n.ID)
}

// memoryFile reports whether task pid's descriptor fd is an open of a
// device's memory file: a device descriptor, or an open the task made
// itself (through /proc/PID/fd) that the driver knows nothing of but
// that resizes the file all the same. Known by the file, not by the
// lock a device descriptor holds.
func (s *Supervisor) memoryFile(pid uint32, fd int32) bool {
	if fd < 0 {
		return false
	}
	_, ok := s.ourFD(pid, fd)
	return ok
}

// hasAccess reports whether task pid's descriptor fd was opened for
// reading (want O_RDONLY) or writing (O_WRONLY).
func (s *Supervisor) hasAccess(pid uint32, fd int32, want int) bool {
	v, err := procfs.Field(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd), "flags")
	if err != nil {
		return true
	}
	fl, err := strconv.ParseUint(v, 8, 64)
	if err != nil {
		return true
	}
	acc := int(fl) & unix.O_ACCMODE
	if want == unix.O_RDONLY {
		return acc == unix.O_RDONLY || acc == unix.O_RDWR
	}
	return acc == unix.O_WRONLY || acc == unix.O_RDWR
}

// handleLock refuses a record lock (OFD or POSIX) on an open of a
// device's memory file (memoryFile), whatever its number, that reaches the bytes from which
// each open holds its own lock (fs.Direct): an OFD lock there could
// replace or remove that one, which tells the daemon the open is gone,
// and any lock there makes an open that is gone look held, or fails the
// lock of an open to come. Locks below them go ahead.
func (s *Supervisor) handleLock(n *seccompNotif, fd int32, arg uint64) {
	if !s.memoryFile(n.Pid, fd) {
		s.pass(n.ID)
		return
	}
	var lk unix.Flock_t
	if readStruct(n.Pid, arg, &lk) != nil {
		s.pass(n.ID) // the kernel's EFAULT
		return
	}
	if lk.Whence == 0 && lk.Start >= 0 && lk.Len > 0 && lk.Start+lk.Len <= DirectLockBase {
		s.pass(n.ID)
		return
	}
	if s.valid(n.ID) {
		s.respond(n.ID, -1, unix.ENOLCK, 0)
	}
}

// DirectLockBase is the first byte of the direct opens' own locks.
const DirectLockBase = int64(1) << 62
