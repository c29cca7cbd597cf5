package chardev

import (
	"bytes"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
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
	// files identifies the descriptors of the files behind the nodes.
	files map[fileID]int
	// standIns identifies nodes that are not of the major (ns.StandIn,
	// where mknod is not allowed): their opens are the device's too.
	standIns map[fileID]int
	// direct serves the descriptors' ioctls and closes (Config.Direct).
	direct Direct
	log    *logrus.Entry
	// syncWake: the kernel wakes a receiver blocked in RECV (Linux ≥ 6.6,
	// which has SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP too), so the loop
	// blocks there instead of polling first.
	syncWake bool
	// noProcmapQuery is set once PROCMAP_QUERY (Linux ≥ 6.11) failed as
	// unsupported; /proc/PID/maps is read instead.
	noProcmapQuery atomic.Bool
	// wg counts the receiving loops and the goroutines that serve device
	// calls.
	wg sync.WaitGroup
	// receiving counts the loops waiting for a notification.
	receiving atomic.Int32
	// loops counts the receiving loops, stalled those past stallAfter on
	// one notification; maxLoops bounds the stalled ones (see loop).
	loops    atomic.Int32
	stalled  atomic.Int32
	maxLoops int32

	// mu guards reserved: descriptor numbers chosen for a device
	// descriptor whose installation is under way, so two installations
	// never pick the same number. Never held across the installation.
	mu       lockrank.Mutex[lockrank.Transport]
	reserved map[uint32]bool

	// pins are the callers' memory, for Direct's ioctls.
	pins *memPins
}

// Config describes the devices a supervisor redirects.
type Config struct {
	Listener int      // the filter's listener fd (taken over)
	Major    uint32   // character major of the nodes
	Nodes    []string // /dev/neuronN paths, by minor
	// Files are the files behind the nodes, by minor, to recognise their
	// descriptors in a process: the FUSE files, or with Direct the
	// physical-memory files Open returns opens of.
	Files []string
	Open  Opener
	Mmap  MmapChecker // nil lets every mmap through
	// Direct, when set, serves the ioctls and closes of device
	// descriptors, which are then not FUSE files: the filter must have
	// been installed with InstallFilter(true).
	Direct Direct
	Log    *logrus.Entry
}

// Direct serves the calls on device descriptors that reach no FUSE file
// (fs.Direct).
type Direct interface {
	// Lookup finds the open behind task tid's descriptor fd, if fd is a
	// device descriptor.
	Lookup(tid int32, fd int32) (file any, ok bool)
	// Ioctl serves an ioctl of task t, whose memory it reaches through
	// t.Mem only.
	Ioctl(file any, t Task, cmd uint32, arg uint64) (int64, unix.Errno)
	// Waits reports whether command cmd may wait for long (for another
	// caller, a reset, a deadline): it is then served off the receiving
	// thread.
	Waits(cmd uint32) bool
	// Flush runs before a close of one of file's descriptors goes ahead.
	Flush(file any, tid int32)
	// Closed says closes went ahead: an open may have gone.
	Closed()
	// Forget says task tid's descriptor fd is being closed or replaced;
	// ForgetProcess that its process may lose descriptors unseen (exec).
	Forget(tid int32, fd int32)
	ForgetProcess(tid int32)
}

// fileID names a file by device and inode number.
type fileID struct{ dev, ino uint64 }

// Serve answers notifications until the listener reports that no filtered
// task is left, then returns.
//
// One receiving thread, not several, unless one is stuck (see loop): the
// kernel wakes every thread blocked in RECV for each notification (the
// wait is not exclusive), and with synchronous wake-up all of them onto
// the notifier's CPU, so each further receiver made every notification pay
// for a thread that woke and slept again.
func Serve(cfg Config) error {
	s := &Supervisor{listener: cfg.Listener, major: cfg.Major, devices: len(cfg.Nodes), open: cfg.Open, mmap: cfg.Mmap, nodes: cfg.Nodes, files: map[fileID]int{}, standIns: map[fileID]int{}, direct: cfg.Direct, log: cfg.Log, reserved: map[uint32]bool{}, maxLoops: MaxResolvingLoops, pins: newMemPins()}
	if s.log == nil {
		s.log = logrus.NewEntry(logrus.StandardLogger())
	}
	for minor, p := range cfg.Files {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return fmt.Errorf("chardev: %s: %w", p, err)
		}
		s.files[fileID{st.Dev, st.Ino}] = minor
	}
	for minor, p := range cfg.Nodes {
		// The nodes are the commands' paths, which the supervisor sees
		// only when it shares their mount namespace (run does; testbed
		// does not, and makes no stand-ins): a node it cannot see is no
		// stand-in of its.
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) != cfg.Major {
			s.standIns[fileID{st.Dev, st.Ino}] = minor
		}
	}
	// Synchronous wake-up: the kernel switches from the notifying task
	// straight to the receiver on the same CPU and back, instead of
	// waking a thread elsewhere. It is what makes a round trip cheap.
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP); e == 0 {
		s.syncWake = true
	} else {
		s.log.WithError(e).Debug("seccomp: no synchronous wake-up (Linux < 6.6); polling the listener")
	}
	s.wg.Add(1)
	s.loops.Add(1)
	go s.loop()
	s.wg.Wait()
	s.pins.close()
	return unix.Close(s.listener)
}

// scratch is the loop's reusable memory, so the common path allocates
// nothing.
type scratch struct {
	path [unix.PathMax + 64]byte
	buf  [4096]byte
	// resolving is the id of the open whose path the loop is resolving
	// (0: none): whoever swaps it to 0 first answers the open, the loop
	// when the resolution ends or the stall timer at ResolveBound.
	resolving    atomic.Uint64
	resolvingTid atomic.Uint32 // its caller, for the log
}

// stallAfter is how long the receiving thread may spend on one
// notification before another thread starts receiving. Deciding an open
// resolves its path, and a lookup on a FUSE file system that a filtered
// process serves waits for that process, which may itself be waiting for
// an open of its own to be answered.
const stallAfter = 50 * time.Millisecond

// ResolveBound is how long an open's path may take to resolve before
// the open is answered CONTINUE: the kernel then does the open itself
// (a device node's fails, as it would without the supervisor), and the
// caller no longer waits on the supervisor.
const ResolveBound = time.Second

// MaxResolvingLoops bounds the stalled loops: each holds its OS thread
// until what stalled it (a path lookup) ends. With that many stalled, one
// more loop serves the rest and answers opens without resolving them.
const MaxResolvingLoops = 8

// loop receives and answers notifications on its own OS thread. Calls
// that cannot concern a device (the path of an open does not name one, a
// descriptor is not one) are answered here, at once; calls on a device go
// to a goroutine of their own, since they call into the FUSE tree and the
// emulated driver and may wait.
//
// Normally one loop runs. When a loop has spent stallAfter on one
// notification and no other is receiving, another starts; a loop that
// finishes a notification while another is receiving ends, so the count
// goes back to one. At most maxLoops loops stall: with that many
// stalled, the one more loop that starts answers opens CONTINUE without
// resolving them (until a stalled one ends), so the supervisor's threads
// stay bounded while every other call is still served. An open still
// resolving after ResolveBound is answered CONTINUE.
func (s *Supervisor) loop() {
	defer s.wg.Done()
	defer s.loops.Add(-1)
	// A thread of its own: a goroutine moved between threads would be
	// rescheduled behind other goroutines on every notification.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	sc := new(scratch)
	fired := make(chan struct{}, 1)
	finished := make(chan struct{}, 1) // the notification was answered
	stall := time.AfterFunc(time.Hour, func() {
		s.stalled.Add(1) // until the loop has read fired
		s.spawn()
		if id := sc.resolving.Load(); id != 0 {
			select {
			case <-finished:
			case <-time.After(ResolveBound - stallAfter):
				if sc.resolving.CompareAndSwap(id, 0) {
					s.log.WithFields(logrus.Fields{"tid": sc.resolvingTid.Load(), "bound": ResolveBound}).Warn("an open's path is still resolving: the kernel opens it itself")
					s.pass(id)
				}
			}
		}
		fired <- struct{}{}
	})
	stall.Stop()
	for {
		var n seccompNotif // RECV wants it zeroed
		s.receiving.Add(1)
		more, ok := s.receive(&n)
		s.receiving.Add(-1)
		if !more {
			return
		}
		if !ok {
			continue
		}
		stall.Reset(stallAfter)
		s.handle(&n, sc)
		if !stall.Stop() {
			finished <- struct{}{}
			<-fired
			s.stalled.Add(-1)
			select {
			case <-finished: // not waited for
			default:
			}
		}
		if s.receiving.Load() > 0 {
			return
		}
	}
}

// spawn starts another loop when none is receiving, unless maxLoops
// are stalled and the one more is running: that one does not stall on
// paths (handleOpen).
func (s *Supervisor) spawn() {
	if s.receiving.Load() != 0 {
		return
	}
	n := s.loops.Load()
	if n > s.maxLoops || !s.loops.CompareAndSwap(n, n+1) {
		return
	}
	if s.stalled.Load() >= s.maxLoops {
		s.log.WithField("stalled", s.stalled.Load()).Warn("calls are stalled (opens resolving their paths): further opens go to the kernel unresolved until one ends")
	}
	s.wg.Add(1) // the stalled loop's count is held until its stall timer is done
	go s.loop()
}

// receive takes the next notification into n. more is false once no
// filtered task is left; ok is false when nothing was taken (a signal,
// or a target that died before its notification was received).
func (s *Supervisor) receive(n *seccompNotif) (more, ok bool) {
	if !s.syncWake {
		// Before Linux 6.6 a blocked RECV is not woken when the last
		// filtered task goes away; the listener's poll reports it.
		fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			return err == unix.EINTR, false
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return false, false
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n))); e != 0 {
		switch e {
		case unix.EINTR:
			return true, false
		case unix.ENOENT:
			// The target died between notification and receipt, another
			// loop took it, or no task uses the filter any more (then
			// the listener reports a hang-up).
			return !s.orphaned(), false
		}
		return false, false // ENOTCONN etc.: no task uses the filter any more
	}
	return true, true
}

// orphaned reports whether no task uses the filter any more.
func (s *Supervisor) orphaned() bool {
	fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, 0)
	return err == nil && fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}

// slow runs f, a device call, on a goroutine of its own.
func (s *Supervisor) slow(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

func (s *Supervisor) respond(id uint64, val int64, errno unix.Errno, flags uint32) {
	resp := seccompNotifResp{ID: id, Val: val, Error: -int32(errno), Flags: flags}
	unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

// pass lets the call proceed in the kernel as if it had not been
// filtered.
func (s *Supervisor) pass(id uint64) { s.respond(id, 0, 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE) }

// valid reports whether the notification is still live, i.e. what was
// read from the target's memory or /proc belongs to this very syscall.
func (s *Supervisor) valid(id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

func (s *Supervisor) handle(n *seccompNotif, sc *scratch) {
	a := n.Data.Args
	switch n.Data.Nr {
	case unix.SYS_OPEN:
		s.handleOpen(n, sc, unix.AT_FDCWD, a[0], a[1])
	case unix.SYS_OPENAT:
		s.handleOpen(n, sc, int32(a[0]), a[1], a[2])
	case unix.SYS_OPENAT2:
		var how unix.OpenHow
		if readStruct(n.Pid, a[2], &how) != nil || a[3] < uint64(unsafe.Sizeof(how)) {
			s.pass(n.ID)
			return
		}
		if how.Flags&(unix.O_PATH|unix.O_DIRECTORY) != 0 {
			s.pass(n.ID)
			return
		}
		s.handleOpen(n, sc, int32(a[0]), a[1], how.Flags)
	case unix.SYS_FSTAT:
		s.handleStat(n, int32(a[0]), a[1], false, 0)
	case unix.SYS_NEWFSTATAT:
		s.handleEmptyPathStat(n, sc, int32(a[0]), a[1], a[2], false, 0)
	case unix.SYS_STATX:
		s.handleEmptyPathStat(n, sc, int32(a[0]), a[1], a[4], true, uint32(a[3]))
	case unix.SYS_MMAP:
		s.handleMmap(n, int32(a[4]), a[5], a[1], int(a[2]), int(a[3]))
	case unix.SYS_MREMAP:
		s.handleMremap(n, a[0], a[1], a[2])
	case unix.SYS_DUP:
		s.handleDup(n, int32(a[0]), false)
	case unix.SYS_FCNTL:
		// The filter sends F_DUPFD and F_DUPFD_CLOEXEC, and with Direct
		// the lock commands.
		switch int32(a[1]) {
		case unix.F_OFD_SETLK, unix.F_OFD_SETLKW, unix.F_SETLK, unix.F_SETLKW:
			if s.direct != nil {
				s.handleLock(n, int32(a[0]), a[2])
				return
			}
		}
		if cmd := int32(a[1]); cmd == unix.F_DUPFD || cmd == unix.F_DUPFD_CLOEXEC {
			s.handleDup(n, int32(a[0]), cmd == unix.F_DUPFD_CLOEXEC)
			return
		}
		s.pass(n.ID)
	case unix.SYS_EXECVE, unix.SYS_EXECVEAT:
		s.pins.execed()
		if s.direct != nil {
			s.direct.ForgetProcess(int32(n.Pid))
		}
		s.pass(n.ID)
	case unix.SYS_IOCTL:
		s.handleIoctl(n, int32(a[0]), uint32(a[1]), a[2])
	case unix.SYS_CLOSE:
		s.handleClose(n, int32(a[0]))
	case unix.SYS_CLOSE_RANGE:
		s.handleCloseRange(n, uint32(a[0]), uint32(a[1]), uint32(a[2]))
	case unix.SYS_DUP2, unix.SYS_DUP3:
		if s.direct != nil {
			if int32(a[1]) >= FDBase {
				s.handleDupOnto(n, int32(a[0]), int32(a[1]))
			} else {
				s.handleDirectDupLow(n, int32(a[0]), int32(a[1]))
			}
			return
		}
		// A copy onto a number below FDBase is outside the range the
		// filter recognises: it works (the same open file, so every
		// ioctl is the same), but its fstat and mmap are no longer
		// seen. The program chose the number, so it is kept.
		if s.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
			if minor, ok := s.ourFD(n.Pid, int32(a[0])); ok {
				s.log.Debugf("task %d copies a descriptor of neuron%d to %d, below %d: its fstat and mmap are not checked", n.Pid, minor, int32(a[1]), FDBase)
			}
		}
		s.pass(n.ID)
	case unix.SYS_TRUNCATE:
		s.handleTruncate(n, sc, a[0])
	default:
		if r, ok := refusalFor(n.Data.Nr); ok {
			s.handleRefusal(n, r)
			return
		}
		s.pass(n.ID)
	}
}

// handleOpen redirects an open that resolves to one of the nodes. The
// decision is made here, on the receiving thread; only a device open
// leaves it.
func (s *Supervisor) handleOpen(n *seccompNotif, sc *scratch, dirfd int32, pathPtr, flags uint64) {
	if s.stalled.Load() >= s.maxLoops {
		// Resolving could stall the last loop too.
		s.pass(n.ID)
		return
	}
	sc.resolvingTid.Store(n.Pid)
	sc.resolving.Store(n.ID)
	path, err := readPath(n.Pid, pathPtr, sc.buf[:])
	var minor int
	ok := false
	if err == nil && flags&unix.O_PATH == 0 {
		// Not checked for validity yet: a pass is harmless whatever the
		// target turned out to be.
		minor, ok = s.resolve(sc, n.Pid, dirfd, path, flags&unix.O_NOFOLLOW != 0)
	}
	if !sc.resolving.CompareAndSwap(n.ID, 0) {
		return // answered CONTINUE at ResolveBound
	}
	if !ok {
		s.pass(n.ID)
		return
	}
	if !s.valid(n.ID) {
		s.pass(n.ID)
		return
	}
	if flags&unix.O_DIRECTORY != 0 {
		s.respond(n.ID, 0, unix.ENOTDIR, 0)
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() { s.openDevice(id, tid, minor, flags) })
}

func (s *Supervisor) openDevice(id uint64, tid uint32, minor int, flags uint64) {
	openFlags := int(flags) & (unix.O_ACCMODE | unix.O_NONBLOCK | unix.O_APPEND | unix.O_SYNC)
	fd, err := s.open(minor, openFlags, int32(tid))
	if err != nil {
		errno, ok := err.(unix.Errno)
		if !ok {
			errno = unix.EIO
		}
		s.respond(id, 0, errno, 0)
		return
	}
	defer unix.Close(fd)
	s.install(id, tid, fd, flags&unix.O_CLOEXEC != 0)
}

// install puts src into the target at the lowest free number from FDBase
// up, as the answer to notification id.
func (s *Supervisor) install(id uint64, tid uint32, src int, cloexec bool) {
	add := seccompNotifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(src)}
	if cloexec {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	slot, ok := s.reserve(tid)
	if !ok && s.direct != nil {
		// A direct descriptor below FDBase would read and write the
		// device's whole memory unseen: as if no number were free.
		s.log.Warnf("task %d: no descriptor number free from %d below its RLIMIT_NOFILE: its device open fails with EMFILE", tid, FDBase)
		s.respond(id, 0, unix.EMFILE, 0)
		return
	}
	if ok {
		defer s.unreserve(slot)
		add.Flags |= unix.SECCOMP_ADDFD_FLAG_SETFD
		add.Newfd = slot
	}
	// With FLAG_SEND the installed fd number is the syscall's result.
	fd, e := addfdUninterrupted(s.listener, &add)
	if e != 0 && e != unix.ENOENT {
		s.log.WithError(e).Warn("installing a device fd failed")
		s.respond(id, 0, e, 0)
	}
	if e == 0 && s.direct != nil {
		// Whatever the number was remembered as is gone (its close was
		// seen, unless it raced with this call).
		s.direct.Forget(int32(tid), int32(fd))
	}
}

// addfdUninterrupted issues ADDFD with every signal blocked on the
// calling thread. ADDFD with FLAG_SEND marks the notification answered
// before it waits for the target to install the descriptor; if a signal
// (the Go runtime's SIGURG preemption) interrupts that wait, the kernel
// withdraws the descriptor, the restarted ioctl fails with EINPROGRESS,
// and the target's call returns 0 with no descriptor installed.
func addfdUninterrupted(listener int, add *seccompNotifAddfd) (int, unix.Errno) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return -1, err.(unix.Errno)
	}
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), ioctlNotifAddfd, uintptr(unsafe.Pointer(add)))
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return int(fd), e
}

// reserve picks the lowest number from FDBase up that is free in task
// tid's descriptor table and below its RLIMIT_NOFILE. Without one (a
// limit of FDBase or less, or every number taken) the descriptor goes
// where the kernel puts it, the lowest free number, and the filter does
// not recognise it: it works, but fstat shows the FUSE file and mmaps
// are not checked. That is logged.
func (s *Supervisor) reserve(tid uint32) (uint32, bool) {
	soft, err := nofileLimit(tid)
	if err != nil {
		s.log.WithError(err).Warnf("task %d: cannot read its RLIMIT_NOFILE", tid)
		return 0, false
	}
	limit := min(soft, FDBase+1<<20)
	// The listing and the choice happen under the lock: a number another
	// installation released after this listing was made would otherwise
	// look free, and the second ADDFD would replace the first descriptor.
	// Reading /proc is no wait on another party; the ADDFD, which waits
	// for the target, happens after the lock is released.
	s.mu.Lock()
	used, err := usedFDs(tid)
	if err != nil {
		s.mu.Unlock()
		s.log.WithError(err).Warnf("task %d: cannot list its descriptors", tid)
		return 0, false
	}
	for fd := uint32(FDBase); uint64(fd) < limit; fd++ {
		if !used[fd] && !s.reserved[fd] {
			s.reserved[fd] = true
			s.mu.Unlock()
			return fd, true
		}
	}
	s.mu.Unlock()
	if s.direct == nil {
		s.log.Warnf("task %d: no descriptor number free from %d below its RLIMIT_NOFILE (%d): its device descriptor gets the lowest free number, where fstat shows the FUSE file and mmaps are not checked", tid, FDBase, soft)
	}
	return 0, false
}

// usedFDs lists task tid's descriptors from FDBase up.
func usedFDs(tid uint32) (map[uint32]bool, error) {
	d, err := os.Open(fmt.Sprintf("/proc/%d/fd", tid))
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	used := map[uint32]bool{}
	for _, name := range names {
		if fd, err := strconv.ParseUint(name, 10, 32); err == nil && fd >= FDBase {
			used[uint32(fd)] = true
		}
	}
	return used, err
}

// nofileLimit is task tid's soft RLIMIT_NOFILE: from prlimit, which
// needs CAP_SYS_RESOURCE for another user's task (a container may not
// grant it), or else from /proc/TID/limits.
func nofileLimit(tid uint32) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Prlimit(int(tid), unix.RLIMIT_NOFILE, nil, &lim); err == nil {
		return lim.Cur, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", tid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Max open files")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				break
			}
			if string(f[0]) == "unlimited" {
				return ^uint64(0), nil
			}
			return strconv.ParseUint(string(f[0]), 10, 64)
		}
	}
	return 0, fmt.Errorf("no open-files line in /proc/%d/limits", tid)
}

func (s *Supervisor) unreserve(fd uint32) {
	s.mu.Lock()
	delete(s.reserved, fd)
	s.mu.Unlock()
}

// handleDup follows dup and fcntl(F_DUPFD*) of a device descriptor (the
// filter sends only those whose copy would land below FDBase): the copy,
// the same open file, goes to a number from FDBase up instead, so the
// filter keeps recognising it. The number differs from the kernel's
// lowest free one; nothing about the open file does.
func (s *Supervisor) handleDup(n *seccompNotif, fd int32, cloexec bool) {
	if _, ok := s.ourFD(n.Pid, fd); !ok {
		s.pass(n.ID)
		return
	}
	id, tid := n.ID, n.Pid
	s.slow(func() {
		// Before Linux 6.9 the pin is the caller's process, whose
		// descriptor table its threads share (a thread that unshared
		// its table is not followed there).
		pin, err := procfs.PinThread(int32(tid))
		if err != nil {
			s.pass(id)
			return
		}
		pidfd := pin.Fd
		defer unix.Close(pidfd)
		// The pidfd pins the task: if the notification is still live, it
		// is the task that made the call.
		if !s.valid(id) {
			return
		}
		src, err := unix.PidfdGetfd(pidfd, int(fd), 0)
		if err != nil {
			s.log.WithError(err).Debug("pidfd_getfd of a device descriptor")
			s.pass(id)
			return
		}
		defer unix.Close(src)
		s.install(id, tid, src, cloexec)
	})
}

// resolve decides, with the kernel's own path walk from the target's root,
// cwd or directory fd, whether path names one of the nodes (or the FUSE
// file behind one).
func (s *Supervisor) resolve(sc *scratch, pid uint32, dirfd int32, path []byte, noFollow bool) (int, bool) {
	if len(path) == 0 {
		return 0, false
	}
	p := append(sc.path[:0], "/proc/"...)
	p = strconv.AppendUint(p, uint64(pid), 10)
	switch {
	case procSelf(path) > 0:
		// The target's own /proc entries: walked from its root, "self"
		// would be the supervisor.
		path = path[procSelf(path):]
	case path[0] == '/':
		p = append(p, "/root"...)
	case dirfd == unix.AT_FDCWD:
		p = append(p, "/cwd/"...)
	default:
		p = append(p, "/fd/"...)
		p = strconv.AppendInt(p, int64(dirfd), 10)
		p = append(p, '/')
	}
	if len(p)+len(path)+1 > len(sc.path) {
		return 0, false
	}
	p = append(p, path...)
	p = append(p, 0)
	flags := unix.AT_STATX_DONT_SYNC // cached attributes: a FUSE file costs no GETATTR
	if noFollow {
		flags |= unix.AT_SYMLINK_NOFOLLOW
	}
	var stx unix.Statx_t
	cwd := unix.AT_FDCWD // the path is absolute
	if _, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(cwd), uintptr(unsafe.Pointer(&p[0])), uintptr(flags), unix.STATX_TYPE|unix.STATX_INO, uintptr(unsafe.Pointer(&stx)), 0); e != 0 {
		return 0, false
	}
	switch stx.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if stx.Rdev_major != s.major {
			minor, ok := s.standIns[fileID{unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}]
			return minor, ok
		}
		minor := int(stx.Rdev_minor)
		return minor, minor < s.devices
	case unix.S_IFREG:
		return s.fuseNode(&stx)
	}
	return 0, false
}

// procSelf is the length of path's prefix that names the calling task's
// own /proc directory ("/proc/self", "/proc/thread-self", or "/dev/fd",
// which names its fd directory), or 0. What follows is the part of the
// path inside that directory ("/fd/N"; for /dev/fd the "fd" is kept).
func procSelf(path []byte) int {
	for _, pre := range []string{"/proc/self", "/proc/thread-self"} {
		if bytes.HasPrefix(path, []byte(pre)) && (len(path) == len(pre) || path[len(pre)] == '/') {
			return len(pre)
		}
	}
	if bytes.HasPrefix(path, []byte("/dev/fd/")) {
		return len("/dev")
	}
	return 0
}

// fuseNode reports which device's file (Config.Files) stx is, if it is
// one.
func (s *Supervisor) fuseNode(stx *unix.Statx_t) (int, bool) {
	minor, ok := s.files[fileID{unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}]
	return minor, ok
}

// ourFD reports which device an fd of the target is, if it is one.
func (s *Supervisor) ourFD(pid uint32, fd int32) (int, bool) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, fmt.Sprintf("/proc/%d/fd/%d", pid, fd), unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &stx); err != nil {
		return 0, false
	}
	return s.fuseNode(&stx)
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

// handleEmptyPathStat answers newfstatat/statx with AT_EMPTY_PATH (the
// filter sends no other) and an empty or NULL path (Linux ≥ 6.11 takes
// NULL for "") as fstat of the descriptor.
func (s *Supervisor) handleEmptyPathStat(n *seccompNotif, sc *scratch, dirfd int32, pathPtr, buf uint64, isStatx bool, mask uint32) {
	if pathPtr != 0 {
		path, err := readPath(n.Pid, pathPtr, sc.buf[:])
		if err != nil || len(path) != 0 {
			s.pass(n.ID)
			return
		}
	}
	s.handleStat(n, dirfd, buf, isStatx, mask)
}

// handleStat answers a stat of a device fd with the character node's,
// with the device number the node stands for (a stand-in's is 0:0).
func (s *Supervisor) handleStat(n *seccompNotif, fd int32, buf uint64, isStatx bool, mask uint32) {
	minor, ok := s.ourFD(n.Pid, fd)
	if !ok {
		s.pass(n.ID)
		return
	}
	// The answer is written through a pin of the caller, checked after
	// it: a caller killed meanwhile has its id reused at once.
	pin, err := s.pins.get(n.Pid)
	if err != nil {
		s.pass(n.ID)
		return
	}
	defer func() { s.pins.put(pin) }()
	if !s.valid(n.ID) {
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
		stx.Rdev_major, stx.Rdev_minor = s.major, uint32(minor)
		out = unsafe.Slice((*byte)(unsafe.Pointer(&stx)), unsafe.Sizeof(stx))
	} else {
		var st unix.Stat_t
		if err := unix.Stat(s.nodes[minor], &st); err != nil {
			s.pass(n.ID)
			return
		}
		st.Rdev = unix.Mkdev(s.major, uint32(minor))
		out = unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st))
	}
	k, err := unix.Pwrite(pin.mem, out, int64(buf))
	if k == 0 && err == nil {
		// The pin's address space is gone while the call is live: the
		// caller exec'd since it was cached.
		fresh, rerr := s.pins.repin(n.Pid, pin)
		if rerr == nil {
			s.pins.put(pin)
			pin = fresh
			if s.valid(n.ID) {
				k, err = unix.Pwrite(pin.mem, out, int64(buf))
			}
		}
	}
	if err != nil || k < len(out) {
		s.respond(n.ID, 0, unix.EFAULT, 0)
		return
	}
	s.respond(n.ID, 0, 0, 0)
}

// readPath reads a NUL-terminated path from the target into buf, page by
// page so a short mapping does not fail the read. A path longer than buf
// (PATH_MAX is longer than a page) is read into a fresh buffer.
func readPath(pid uint32, addr uint64, buf []byte) ([]byte, error) {
	var out []byte
	for len(out) < unix.PathMax {
		chunk := buf[:4096-int(addr%4096)]
		k, err := readMem(pid, addr, chunk)
		if k == 0 {
			if err == nil {
				err = unix.EFAULT
			}
			return nil, err
		}
		if i := bytes.IndexByte(chunk[:k], 0); i >= 0 {
			if out == nil {
				return chunk[:i], nil
			}
			return append(out, chunk[:i]...), nil
		}
		out = append(out, chunk[:k]...)
		addr += uint64(k)
	}
	return nil, unix.ENAMETOOLONG
}

func readMem(pid uint32, addr uint64, p []byte) (int, error) {
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	return unix.ProcessVMReadv(int(pid), local, remote, 0)
}

func readStruct[T any](pid uint32, addr uint64, v *T) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
	n, err := readMem(pid, addr, b)
	if err == nil && n < len(b) {
		err = unix.EFAULT
	}
	return err
}
