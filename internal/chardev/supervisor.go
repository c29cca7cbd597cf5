package chardev

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
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
	// paths is the filter host view (Config.Paths), or nil.
	paths PathView
	log   *logrus.Entry
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
	// pipes apply the writes of attribute descriptors copied below
	// FDBase (the filter host view, attrpipe.go).
	pipes attrPipes
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
	// View is where the supervisor sees the commands' root when it does
	// not share their mount namespace (/proc/PID/root): the stand-ins of
	// Nodes are looked for there. Empty: the supervisor's own root.
	View string
	// Paths, when set, is the filter host view: no node, sysfs or
	// /proc/devices line on disk; the filter must have been installed
	// with InstallViewFilter, and Direct set.
	Paths PathView
	Log   *logrus.Entry
}

// Direct serves the calls on device descriptors that reach no FUSE file
// (fs.Direct).
type Direct interface {
	// Lookup finds the open behind task tid's descriptor fd, if fd is a
	// device descriptor.
	Lookup(tid int32, fd int32) (File, bool)
	// Inline reports whether command cmd answers at once, so that it is
	// served on the receiving thread; any other may wait (for another
	// caller, a reset, a deadline) and is served off it, watching its
	// caller for death.
	Inline(cmd uint32) bool
	// Closed says closes went ahead: an open may have gone.
	Closed()
	// Forget says task tid's descriptor fd is being closed or replaced;
	// ForgetProcess that its process may lose descriptors unseen (exec).
	Forget(tid int32, fd int32)
	ForgetProcess(tid int32)
}

// File is one open of a device behind a device descriptor, as
// Direct.Lookup found it. Each call names the task it serves.
type File interface {
	// Ioctl serves an ioctl of task t, whose memory it reaches through
	// t.Mem only.
	Ioctl(t Task, cmd uint32, arg uint64) (int64, unix.Errno)
	// Flush runs before task tid's close of one of the open's
	// descriptors goes ahead.
	Flush(tid int32)
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
	s := &Supervisor{listener: cfg.Listener, major: cfg.Major, devices: len(cfg.Nodes), open: cfg.Open, mmap: cfg.Mmap, nodes: cfg.Nodes, files: map[fileID]int{}, standIns: map[fileID]int{}, direct: cfg.Direct, paths: cfg.Paths, log: cfg.Log, reserved: map[uint32]bool{}, maxLoops: MaxResolvingLoops, pins: newMemPins()}
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
		// where it shares their mount namespace (run does) or through
		// View (a testbed without root): a node it cannot see is no
		// stand-in of its.
		var st unix.Stat_t
		if err := unix.Stat(cfg.View+p, &st); err != nil {
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
	s.pipes.stop()
	s.pins.close()
	return unix.Close(s.listener)
}
