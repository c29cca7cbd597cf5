package chardev

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"
)

// Kernel structs of the seccomp user-notification API.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

const (
	ioctlNotifIDValid = 0x40082102 // SECCOMP_IOW(2, __u64)
	ioctlNotifAddfd   = 0x40182103 // SECCOMP_IOW(3, struct seccomp_notif_addfd)
)

// MmapChecker answers whether task tid may map [off, off+length) of
// device minor with prot: 0, or the errno the mmap fails with.
type MmapChecker func(minor int, tid int32, off, length uint64, prot int) unix.Errno

// Opener opens the FUSE node of device minor for the task tid, as if tid
// itself had opened it (so the device attaches tid's process).
type Opener func(minor int, flags int, tid int32) (int, error)

// Supervisor answers the notifications of one filter.
type Supervisor struct {
	listener int
	major    uint32
	devices  int
	open     Opener
	mmap     MmapChecker
	// nodes are the character nodes (for stat answers), by minor.
	nodes []string
	// fuseDev and fuseInos identify descriptors of the FUSE device nodes.
	fuseDev  uint64
	fuseInos map[uint64]int // inode -> minor
	log      *logrus.Entry
	wg       sync.WaitGroup
}

// Config describes the devices a supervisor redirects.
type Config struct {
	Listener int      // the filter's listener fd (taken over)
	Major    uint32   // character major of the nodes
	Nodes    []string // /dev/neuronN paths, by minor
	// FUSENodes are the FUSE files behind the nodes, by minor, to
	// recognise their descriptors in a process.
	FUSENodes []string
	Open      Opener
	Mmap      MmapChecker // nil lets every mmap through
	Log       *logrus.Entry
}

// Serve answers notifications with workers goroutines until the listener
// reports that no filtered task is left, then returns.
func Serve(cfg Config, workers int) error {
	s := &Supervisor{listener: cfg.Listener, major: cfg.Major, devices: len(cfg.Nodes), open: cfg.Open, mmap: cfg.Mmap, nodes: cfg.Nodes, fuseInos: map[uint64]int{}, log: cfg.Log}
	for minor, p := range cfg.FUSENodes {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return fmt.Errorf("chardev: %s: %w", p, err)
		}
		s.fuseDev = st.Dev
		s.fuseInos[st.Ino] = minor
	}
	for i := 0; i < workers; i++ {
		s.wg.Add(1)
		go s.loop()
	}
	s.wg.Wait()
	return unix.Close(s.listener)
}

func (s *Supervisor) loop() {
	defer s.wg.Done()
	for {
		// Wait for a notification first: once no task uses the filter the
		// listener reports a hang-up, while RECV would keep failing with
		// ENOENT and spin.
		fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return
		}
		var n seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n))); e != 0 {
			switch e {
			case unix.EINTR, unix.ENOENT:
				// Another worker took it, or the target died between
				// notification and receipt.
				continue
			}
			return // ENOTCONN etc.: no task uses the filter any more
		}
		s.handle(&n)
	}
}

func (s *Supervisor) respond(id uint64, val int64, errno unix.Errno, flags uint32) {
	resp := seccompNotifResp{ID: id, Val: val, Error: -int32(errno), Flags: flags}
	unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

func (s *Supervisor) pass(id uint64) { s.respond(id, 0, 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE) }

// valid reports whether the notification is still live, i.e. what was
// read from the target's memory belongs to this very syscall.
func (s *Supervisor) valid(id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

func (s *Supervisor) handle(n *seccompNotif) {
	a := n.Data.Args
	switch n.Data.Nr {
	case unix.SYS_OPEN:
		s.handleOpen(n, unix.AT_FDCWD, a[0], a[1])
	case unix.SYS_OPENAT:
		s.handleOpen(n, int32(a[0]), a[1], a[2])
	case unix.SYS_OPENAT2:
		var how unix.OpenHow
		if readStruct(n.Pid, a[2], &how) != nil || a[3] < uint64(unsafe.Sizeof(how)) {
			s.pass(n.ID)
			return
		}
		s.handleOpen(n, int32(a[0]), a[1], how.Flags)
	case unix.SYS_FSTAT:
		s.handleStat(n, int32(a[0]), a[1], false, 0)
	case unix.SYS_NEWFSTATAT:
		s.handleEmptyPathStat(n, int32(a[0]), a[1], a[2], false, 0)
	case unix.SYS_STATX:
		s.handleEmptyPathStat(n, int32(a[0]), a[1], a[4], true, uint32(a[3]))
	case unix.SYS_MMAP:
		s.handleMmap(n, int32(a[4]), a[5], a[1], int(a[2]), int(a[3]))
	case unix.SYS_MREMAP:
		s.handleMremap(n, a[0], a[1], a[2])
	default:
		s.pass(n.ID)
	}
}

// handleOpen redirects an open that resolves to one of the nodes.
func (s *Supervisor) handleOpen(n *seccompNotif, dirfd int32, pathPtr, flags uint64) {
	path, err := readString(n.Pid, pathPtr)
	if err != nil || !s.valid(n.ID) || flags&unix.O_PATH != 0 {
		s.pass(n.ID)
		return
	}
	minor, ok := s.resolve(n.Pid, dirfd, path, flags&unix.O_NOFOLLOW != 0)
	if !ok {
		s.pass(n.ID)
		return
	}
	if flags&unix.O_DIRECTORY != 0 {
		s.respond(n.ID, 0, unix.ENOTDIR, 0)
		return
	}
	openFlags := int(flags) & (unix.O_ACCMODE | unix.O_NONBLOCK | unix.O_APPEND | unix.O_SYNC)
	fd, err := s.open(minor, openFlags, int32(n.Pid))
	if err != nil {
		errno, ok := err.(unix.Errno)
		if !ok {
			errno = unix.EIO
		}
		s.respond(n.ID, 0, errno, 0)
		return
	}
	defer unix.Close(fd)
	add := seccompNotifAddfd{ID: n.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd)}
	if flags&unix.O_CLOEXEC != 0 {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	// With FLAG_SEND the installed fd number is the syscall's result.
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), ioctlNotifAddfd, uintptr(unsafe.Pointer(&add))); e != 0 && e != unix.ENOENT {
		s.log.WithError(e).Warn("installing a device fd failed")
		s.respond(n.ID, 0, e, 0)
	}
}

// resolve decides, with the kernel's own path walk from the target's root,
// cwd or directory fd, whether path names one of the nodes.
func (s *Supervisor) resolve(pid uint32, dirfd int32, path string, noFollow bool) (int, bool) {
	if path == "" {
		return 0, false
	}
	var full string
	switch {
	case path[0] == '/':
		full = fmt.Sprintf("/proc/%d/root%s", pid, path)
	case dirfd == unix.AT_FDCWD:
		full = fmt.Sprintf("/proc/%d/cwd/%s", pid, path)
	default:
		full = fmt.Sprintf("/proc/%d/fd/%d/%s", pid, dirfd, path)
	}
	var st unix.Stat_t
	flags := 0
	if noFollow {
		flags = unix.AT_SYMLINK_NOFOLLOW
	}
	if err := unix.Fstatat(unix.AT_FDCWD, full, &st, flags); err != nil {
		return 0, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != s.major {
		return 0, false
	}
	minor := int(unix.Minor(st.Rdev))
	return minor, minor < s.devices
}

// ourFD reports which device an fd of the target is, if it is one.
func (s *Supervisor) ourFD(pid uint32, fd int32) (int, bool) {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), &st); err != nil || st.Dev != s.fuseDev {
		return 0, false
	}
	minor, ok := s.fuseInos[st.Ino]
	return minor, ok
}

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
	if e := s.mmap(minor, int32(n.Pid), off, length, prot); e != 0 && s.valid(n.ID) {
		s.respond(n.ID, -1, e, 0)
		return
	}
	s.pass(n.ID)
}

const pageSize = 4096

// handleMremap fails the growth of a device mapping with EFAULT: the
// driver's mappings are VM_DONTEXPAND (and PFN maps), which mremap refuses
// to grow. Everything else goes ahead.
func (s *Supervisor) handleMremap(n *seccompNotif, addr, oldLen, newLen uint64) {
	if newLen > oldLen {
		m, ok := procfs.MappingAt(int(n.Pid), addr)
		if ok && m.Major == unix.Major(s.fuseDev) && m.Minor == unix.Minor(s.fuseDev) {
			if _, dev := s.fuseInos[m.Inode]; dev && s.valid(n.ID) {
				s.respond(n.ID, -1, unix.EFAULT, 0)
				return
			}
		}
	}
	s.pass(n.ID)
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

func (s *Supervisor) handleEmptyPathStat(n *seccompNotif, dirfd int32, pathPtr, buf uint64, isStatx bool, mask uint32) {
	path, err := readString(n.Pid, pathPtr)
	if err != nil || path != "" {
		s.pass(n.ID)
		return
	}
	s.handleStat(n, dirfd, buf, isStatx, mask)
}

// handleStat answers a stat of a device fd with the character node's.
func (s *Supervisor) handleStat(n *seccompNotif, fd int32, buf uint64, isStatx bool, mask uint32) {
	minor, ok := s.ourFD(n.Pid, fd)
	if !ok || !s.valid(n.ID) {
		s.pass(n.ID)
		return
	}
	var out []byte
	if isStatx {
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, s.nodes[minor], 0, int(mask), &stx); err != nil {
			s.pass(n.ID)
			return
		}
		out = unsafe.Slice((*byte)(unsafe.Pointer(&stx)), unsafe.Sizeof(stx))
	} else {
		var st unix.Stat_t
		if err := unix.Stat(s.nodes[minor], &st); err != nil {
			s.pass(n.ID)
			return
		}
		out = unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st))
	}
	if err := writeMem(n.Pid, buf, out); err != nil {
		s.respond(n.ID, 0, unix.EFAULT, 0)
		return
	}
	s.respond(n.ID, 0, 0, 0)
}

// readString reads a NUL-terminated string (at most PATH_MAX bytes) from
// the target, page by page so a short mapping does not fail the read.
func readString(pid uint32, addr uint64) (string, error) {
	var out []byte
	buf := make([]byte, 4096)
	for len(out) < unix.PathMax {
		chunk := buf[:4096-int(addr%4096)]
		k, err := readMem(pid, addr, chunk)
		if k == 0 {
			if err == nil {
				err = unix.EFAULT
			}
			return "", err
		}
		if i := bytes.IndexByte(chunk[:k], 0); i >= 0 {
			return string(append(out, chunk[:i]...)), nil
		}
		out = append(out, chunk[:k]...)
		addr += uint64(k)
	}
	return "", unix.ENAMETOOLONG
}

func readMem(pid uint32, addr uint64, p []byte) (int, error) {
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	return unix.ProcessVMReadv(int(pid), local, remote, 0)
}

func writeMem(pid uint32, addr uint64, p []byte) error {
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMWritev(int(pid), local, remote, 0)
	if err == nil && n < len(p) {
		err = unix.EFAULT
	}
	return err
}

func readStruct[T any](pid uint32, addr uint64, v *T) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
	n, err := readMem(pid, addr, b)
	if err == nil && n < len(b) {
		err = unix.EFAULT
	}
	return err
}
