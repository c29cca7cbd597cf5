package fs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/chardev"
	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Direct serves device descriptors that are the device's physical-memory
// file itself (run --device-fds=supervisor): the seccomp supervisor
// installs a fresh open of that file for every open of a device node, so
// a client's mmap is the kernel's own shared mapping of the daemon's
// memory on any kernel, and hands the descriptor's ioctls and closes
// here. They reach the driver through the same calls as the FUSE node's
// (devnode.go).
//
// Each open file holds an OFD lock on a byte of its own far past any
// physical address. The lock lives exactly as long as the open file
// description: it goes with the last reference, whether that was a
// close, an exit, a munmap or a copy passed to another process. The
// daemon finds which locks went (after every close the supervisor sees,
// on the kernel's close events for the file, and periodically) and
// releases those opens as the driver releases on last close. The lock
// also tells which open a client's descriptor is (its fdinfo lists it).
type Direct struct {
	fsys *FS
	log  *logrus.Entry
	devs []*directDev
	// inotify reports every last close of a physical-memory file.
	inotify *os.File
	scan    chan struct{}
	done    chan struct{}
	// warnedTruncate: the warning that clients' opens can truncate the
	// memory was given.
	warnedTruncate atomic.Bool

	mu    lockrank.Mutex[lockrank.Transport] // guards next, opens and procs; a leaf
	next  int64
	opens map[int64]*directOpen // by lock byte
	// procs remembers which open each process's descriptors from
	// chardev.FDBase up are, so an ioctl costs no /proc read: the
	// supervisor sees every call that closes or replaces one of those
	// (close, close_range, dup2/dup3, exec) and says so (Forget,
	// ForgetProcess).
	procs map[int32]*procFDs // by tgid
}

// procFDs is one process's remembered descriptors.
type procFDs struct {
	pidfd int // tells a recycled process id from the process remembered
	fds   map[int32]*directOpen
}

// directDev is one device's physical-memory file.
type directDev struct {
	dev   *device.Device
	path  string // a path of the file, to reopen it
	probe int    // an O_RDWR open of the file that asks about locks
	// lockFile is how /proc/PID/fdinfo names the file in a lock line
	// ("MAJ:MIN:INO", hex device numbers).
	lockFile string
}

// directOpen is one open of a device node, as a direct descriptor: the
// chardev.File the supervisor serves its calls through.
type directOpen struct {
	x    *Direct
	file *device.File
	dev  *directDev
	at   int64 // its lock byte
}

// lockBase is the first lock byte: above any physical address, below
// the largest offset a lock may have. The supervisor refuses a client's
// OFD lock from there up.
const lockBase = chardev.DirectLockBase

// DirectRescan is how often the opens are checked without a close event,
// for a last reference that goes without one the daemon hears of.
const DirectRescan = time.Second

// NewDirect prepares direct descriptors for every device.
func (f *FS) NewDirect() (*Direct, error) {
	x := &Direct{fsys: f, log: f.log, scan: make(chan struct{}, 1), done: make(chan struct{}), opens: map[int64]*directOpen{}, procs: map[int32]*procFDs{}}
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("fs: direct descriptors: inotify: %w", err)
	}
	x.inotify = os.NewFile(uintptr(in), "inotify")
	for _, d := range f.sys.Devices {
		path := fmt.Sprintf("/proc/self/fd/%d", d.Chip().PhysFd())
		probe, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("fs: direct descriptors: reopen %s memory: %w", d.Name(), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(probe, &st); err != nil {
			unix.Close(probe)
			x.Close()
			return nil, fmt.Errorf("fs: direct descriptors: %s memory: %w", d.Name(), err)
		}
		lockFile := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
		x.devs = append(x.devs, &directDev{dev: d, path: path, probe: probe, lockFile: lockFile})
		if _, err := unix.InotifyAddWatch(in, path, unix.IN_CLOSE_WRITE|unix.IN_CLOSE_NOWRITE); err != nil {
			x.log.WithError(err).Debugf("no close events for %s memory; its opens are checked every %v", d.Name(), DirectRescan)
		}
	}
	go x.watchCloses()
	go x.releaser()
	return x, nil
}

// Close stops the release checks; opens still held stay held.
func (x *Direct) Close() {
	select {
	case <-x.done:
		return
	default:
	}
	close(x.done)
	x.inotify.Close()
	for _, d := range x.devs {
		unix.Close(d.probe)
	}
	x.mu.Lock()
	for tgid, p := range x.procs {
		unix.Close(p.pidfd)
		delete(x.procs, tgid)
	}
	x.mu.Unlock()
}

// Paths returns, by device, a path of each physical-memory file: the
// supervisor recognises direct descriptors by their file.
func (x *Direct) Paths() []string {
	out := make([]string, len(x.devs))
	for i, d := range x.devs {
		out[i] = d.path
	}
	return out
}

// Open does the driver's open of device i for task tid and returns a new
// open of the device's physical-memory file for the supervisor to
// install in tid's process.
func (x *Direct) Open(i int, flags int, tid int32) (int, error) {
	if i < 0 || i >= len(x.devs) {
		return -1, syscall.ENODEV
	}
	d := x.devs[i]
	file, errno := x.fsys.open(context.Background(), d.dev, x.fsys.directCaller(tid), flags)
	if errno != 0 {
		return -1, errno
	}
	// Access mode 3 (no read, no write) is free access, like O_WRONLY,
	// and refuses mmap like it: the file is opened O_WRONLY.
	acc := flags & unix.O_ACCMODE
	if acc == unix.O_ACCMODE {
		acc = unix.O_WRONLY
	}
	// The status flags asked for (O_NONBLOCK...) show in F_GETFL as on
	// the device file.
	// An open the client cannot resize (chip.OpenForClient): a shrink
	// would kill the daemon with SIGBUS.
	fd, restricted, err := d.dev.Chip().OpenForClient(acc | flags&^unix.O_ACCMODE)
	if err != nil {
		x.fsys.release(file, tid)
		return -1, fmt.Errorf("fs: %s: %w", d.dev.Name(), err)
	}
	if !restricted && !x.warnedTruncate.Swap(true) {
		x.log.Warnf("%s memory is a file that its direct descriptors could truncate (Landlock cannot deny it: Linux < 6.2, Landlock off, or its calls refused); only the supervisor's refusals stop a client", d.dev.Name())
	}
	x.mu.Lock()
	at := lockBase + x.next
	x.next++
	x.mu.Unlock()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: at, Len: 1}
	if acc == unix.O_RDONLY {
		lk.Type = unix.F_RDLCK
	}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
		unix.Close(fd)
		x.fsys.release(file, tid)
		return -1, fmt.Errorf("fs: lock an open of %s: %w", d.dev.Name(), err)
	}
	x.mu.Lock()
	x.opens[at] = &directOpen{x: x, file: file, dev: d, at: at}
	x.mu.Unlock()
	return fd, nil
}

// Lookup finds the open behind task tid's descriptor fd: remembered, or
// from the lock its fdinfo lists.
func (x *Direct) Lookup(tid int32, fd int32) (chardev.File, bool) {
	if fd < chardev.FDBase {
		if o, ok := x.lookupFdinfo(tid, fd); ok {
			return o, true
		}
		return nil, false
	}
	tgid := x.fsys.tgids.lookup(tid)
	x.mu.Lock()
	p := x.procs[tgid]
	var o *directOpen
	if p != nil {
		if o = p.fds[fd]; o != nil && x.opens[o.at] != o {
			o = nil // released meanwhile: the number was closed unseen
		}
	}
	// Asked under the lock: ForgetProcess may close the pidfd, whose
	// number could then name any other file.
	live := o != nil && alive(p.pidfd)
	x.mu.Unlock()
	if live {
		return o, true
	}
	found, ok := x.lookupFdinfo(tid, fd)
	if !ok {
		return nil, false
	}
	x.remember(tgid, fd, found)
	return found, true
}

// remember notes that process tgid's descriptor fd is open o.
func (x *Direct) remember(tgid, fd int32, o *directOpen) {
	x.mu.Lock()
	p := x.procs[tgid]
	live := p != nil && alive(p.pidfd) // under the lock, as in Lookup
	x.mu.Unlock()
	if !live {
		pidfd, err := unix.PidfdOpen(int(tgid), 0)
		if err != nil {
			return
		}
		x.mu.Lock()
		if old := x.procs[tgid]; old != nil {
			unix.Close(old.pidfd)
		}
		p = &procFDs{pidfd: pidfd, fds: map[int32]*directOpen{}}
		x.procs[tgid] = p
		x.mu.Unlock()
	}
	x.mu.Lock()
	if x.procs[tgid] == p {
		p.fds[fd] = o
	}
	x.mu.Unlock()
}

// Forget says task tid's descriptor fd is being closed or replaced.
func (x *Direct) Forget(tid int32, fd int32) {
	tgid := x.fsys.tgids.lookup(tid)
	x.mu.Lock()
	if p := x.procs[tgid]; p != nil {
		delete(p.fds, fd)
	}
	x.mu.Unlock()
}

// ForgetProcess says task tid's process may lose descriptors unseen (an
// exec closes those marked close-on-exec).
func (x *Direct) ForgetProcess(tid int32) {
	tgid := x.fsys.tgids.lookup(tid)
	x.mu.Lock()
	if p := x.procs[tgid]; p != nil {
		unix.Close(p.pidfd)
		delete(x.procs, tgid)
	}
	x.mu.Unlock()
}

// forgetExited drops what is remembered of processes that exited.
func (x *Direct) forgetExited() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for tgid, p := range x.procs {
		if !alive(p.pidfd) {
			unix.Close(p.pidfd)
			delete(x.procs, tgid)
		}
	}
}

// lookupFdinfo finds the open behind task tid's descriptor fd from the
// lock its fdinfo lists.
func (x *Direct) lookupFdinfo(tid int32, fd int32) (*directOpen, bool) {
	var path [64]byte
	p := append(path[:0], "/proc/"...)
	p = strconv.AppendInt(p, int64(tid), 10)
	p = append(p, "/fdinfo/"...)
	p = strconv.AppendInt(p, int64(fd), 10)
	var buf [1024]byte
	n, err := readSmall(string(p), buf[:])
	if err != nil {
		return nil, false
	}
	file, at, ok := lockOf(buf[:n])
	if !ok {
		return nil, false
	}
	x.mu.Lock()
	o, ok := x.opens[at]
	x.mu.Unlock()
	if !ok || o.dev.lockFile != file {
		return nil, false
	}
	return o, true
}

// Ioctl serves ioctl(fd, cmd, arg) of task t on an open Lookup found:
// the result to return, or the errno. The caller's memory is reached
// only through t.Mem, never by its thread id, which a killed caller's
// successor may hold by the time a long command writes its answer.
func (o *directOpen) Ioctl(t chardev.Task, cmd uint32, arg uint64) (int64, syscall.Errno) {
	x := o.x
	caller := x.fsys.directCaller(t.Tid)
	caller.Gone = t.Gone
	res, errno := x.fsys.ioctl(context.Background(), o.file, caller, pinnedMemory(t.Mem, t.Repin), cmd, arg, nil, nil)
	if errno != 0 {
		return 0, errno
	}
	if res < 0 {
		e := syscall.Errno(-res)
		if e == ioctl.ENOIOCTLCMD {
			e = syscall.ENOTTY // as the VFS shows it
		}
		return 0, e
	}
	return int64(res), 0
}

// Inline reports whether command cmd answers at once: its row in
// device/commands.go says, as for the io_uring transport (transport.go).
func (x *Direct) Inline(cmd uint32) bool { return x.fsys.sys.Inline(cmd) }

// Flush runs the driver's flush for task tid's close of a descriptor of
// an open Lookup found, before the close goes ahead.
func (o *directOpen) Flush(tid int32) {
	o.x.fsys.flush(context.Background(), o.file, o.x.fsys.directCaller(tid))
}

// Closed says a close went ahead: some open may have lost its last
// reference.
func (x *Direct) Closed() {
	select {
	case x.scan <- struct{}{}:
	default:
	}
}

func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Read(fd, buf)
}

// lockOf finds the OFD lock from lockBase up in an fdinfo text
// ("lock:\t1: OFDLCK ADVISORY WRITE -1 00:01:2 START END"): the file it
// names and its start.
func lockOf(info []byte) (string, int64, bool) {
	for line := range bytes.SplitSeq(info, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("lock:"))
		if !ok || !bytes.Contains(rest, []byte("OFDLCK")) {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 3 {
			continue
		}
		at, err := strconv.ParseInt(string(f[len(f)-2]), 10, 64)
		if err == nil && at >= lockBase {
			return string(f[len(f)-3]), at, true
		}
	}
	return "", 0, false
}

// watchCloses turns the kernel's close events on the files into scans.
func (x *Direct) watchCloses() {
	rc, err := x.inotify.SyscallConn()
	if err != nil {
		return
	}
	var buf [4096]byte
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf[:])
			return rerr != unix.EAGAIN
		})
		if err != nil || (rerr != nil && rerr != unix.EINTR) {
			return // closed
		}
		if n > 0 {
			x.Closed()
		}
	}
}

// releaser releases the opens whose lock went, on every scan request and
// every DirectRescan.
func (x *Direct) releaser() {
	t := time.NewTicker(DirectRescan)
	defer t.Stop()
	for {
		select {
		case <-x.done:
			return
		case <-x.scan:
		case <-t.C:
			x.forgetExited()
		}
		x.releaseGone()
	}
}

// releaseGone releases the opens whose lock no longer exists: their open
// file description had its last reference dropped.
func (x *Direct) releaseGone() {
	type held struct {
		at int64
		o  *directOpen
	}
	x.mu.Lock()
	all := make([]held, 0, len(x.opens))
	for at, o := range x.opens {
		all = append(all, held{at, o})
	}
	x.mu.Unlock()
	for _, h := range all {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Start: h.at, Len: 1}
		if err := unix.FcntlFlock(uintptr(h.o.dev.probe), unix.F_OFD_GETLK, &lk); err != nil {
			x.log.WithError(err).Debug("asking for a direct open's lock")
			continue
		}
		if lk.Type != unix.F_UNLCK {
			continue
		}
		x.mu.Lock()
		delete(x.opens, h.at)
		x.mu.Unlock()
		x.fsys.release(h.o.file, 0)
	}
}

// Opens returns how many direct opens of device i are held (for tests).
func (x *Direct) Opens(i int) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, o := range x.opens {
		if o.dev.dev.Index == i {
			n++
		}
	}
	return n
}

// directCaller identifies task tid, which the supervisor saw make the
// call.
func (f *FS) directCaller(tid int32) device.Caller {
	return device.Caller{
		Tid:                tid,
		Tgid:               f.tgids.lookup(tid),
		FatalSignalPending: func() bool { return fatalSignalPending(tid) },
		Live:               true,
	}
}
