package chardev

import (
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"
)

// handleMmap fails an mmap of a device fd that the driver would fail;
// every other mmap goes ahead untouched, and so does one the kernel
// refuses before the driver sees it (its errno comes first).
func (s *Supervisor) handleMmap(n *seccompNotif, fd int32, off, length uint64, prot, flags int) {
	minor, ok := s.ourFD(n.Pid, fd)
	if !ok || s.mmap == nil || length == 0 || off%pageSize != 0 || s.kernelRefuses(n.Pid, fd, prot, flags) {
		s.pass(n.ID)
		return
	}
	// The kernel rounds the length up to pages before the driver sees it.
	length = (length + pageSize - 1) &^ (pageSize - 1)
	id, tid := n.ID, n.Pid
	s.slow(func() {
		if e := s.mmap(minor, int32(tid), off, length, prot); e != 0 && s.valid(id) {
			s.respond(id, -1, e, 0)
			return
		}
		s.pass(id)
	})
}

const pageSize = 4096

// handleMremap fails the growth of a device mapping with EFAULT: the
// driver's mappings are VM_DONTEXPAND (and PFN maps), which mremap refuses
// to grow. Everything else goes ahead. The filter sends growing mremaps
// only.
func (s *Supervisor) handleMremap(n *seccompNotif, addr, oldLen, newLen uint64) {
	if newLen > oldLen {
		if dev, ino, ok := s.mappingAt(n.Pid, addr); ok {
			if _, ours := s.files[fileID{dev, ino}]; ours && s.valid(n.ID) {
				s.respond(n.ID, -1, unix.EFAULT, 0)
				return
			}
		}
	}
	s.pass(n.ID)
}

// procmapQuery is struct procmap_query (Linux ≥ 6.11).
type procmapQuery struct {
	Size, QueryFlags, QueryAddr, VMAStart, VMAEnd, VMAFlags, VMAPageSize, VMAOffset, Inode uint64
	DevMajor, DevMinor, VMANameSize, BuildIDSize                                           uint32
	VMANameAddr, BuildIDAddr                                                               uint64
}

const ioctlProcmapQuery = 0xc0686611 // _IOWR('f', 17, struct procmap_query)

// mappingAt returns the device and inode of the file mapped at addr in
// task pid: with PROCMAP_QUERY, one lookup in the kernel, where it has it,
// otherwise from /proc/PID/maps, whose text grows with every mapping.
func (s *Supervisor) mappingAt(pid uint32, addr uint64) (dev, ino uint64, ok bool) {
	if !s.noProcmapQuery.Load() {
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/maps", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, 0, false
		}
		q := procmapQuery{Size: uint64(unsafe.Sizeof(procmapQuery{})), QueryAddr: addr}
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlProcmapQuery, uintptr(unsafe.Pointer(&q)))
		unix.Close(fd)
		switch e {
		case 0:
			return unix.Mkdev(q.DevMajor, q.DevMinor), q.Inode, true
		case unix.ENOTTY, unix.EINVAL:
			s.noProcmapQuery.Store(true)
		default:
			return 0, 0, false
		}
	}
	m, ok := procfs.MappingAt(int(pid), addr)
	return unix.Mkdev(m.Major, m.Minor), m.Inode, ok
}

// kernelRefuses reports whether the kernel fails the mmap on the fd's
// access mode alone (EACCES): every mapping needs read access, a shared
// writable one write access.
func (s *Supervisor) kernelRefuses(pid uint32, fd int32, prot, flags int) bool {
	v, err := procfs.Field(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd), "flags")
	if err != nil {
		return false
	}
	fl, err := strconv.ParseUint(v, 8, 64)
	if err != nil {
		return false
	}
	acc := int(fl) & unix.O_ACCMODE
	shared := flags&unix.MAP_TYPE == unix.MAP_SHARED || flags&unix.MAP_TYPE == unix.MAP_SHARED_VALIDATE
	return acc == unix.O_WRONLY || (shared && prot&unix.PROT_WRITE != 0 && acc == unix.O_RDONLY)
}
