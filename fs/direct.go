package fs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/lockrank"
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
}

// directDev is one device's direct opens.
type directDev struct {
	dev   *device.Device
	path  string // a path of the physical-memory file, to reopen it
	probe int    // an O_RDWR open of the file that asks about locks

	mu    lockrank.Mutex[lockrank.Transport] // guards next and files; a leaf
	next  int64
	files map[int64]*device.File // by lock byte
}

// lockBase is the first lock byte: above any physical address, below
// the largest offset a lock may have.
const lockBase = int64(1) << 62

// DirectRescan is how often the opens are checked without a close event,
// for a last reference that goes without one (a copy passed away and
// closed in a process the supervisor does not see).
const DirectRescan = time.Second

// NewDirect prepares direct descriptors for every device.
func (f *FS) NewDirect() (*Direct, error) {
	x := &Direct{fsys: f, log: f.log, scan: make(chan struct{}, 1), done: make(chan struct{})}
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("fs: direct descriptors: inotify: %w", err)
	}
	x.inotify = os.NewFile(uintptr(in), "inotify")
	for _, d := range f.sys.Devices {
		path := fmt.Sprintf("/proc/self/fd/%d", d.PhysFd())
		probe, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("fs: direct descriptors: reopen %s memory: %w", d.Name(), err)
		}
		x.devs = append(x.devs, &directDev{dev: d, path: path, probe: probe, files: map[int64]*device.File{}})
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
	caller := x.fsys.directCaller(tid)
	file, errno := x.fsys.open(context.Background(), d.dev, caller, flags)
	if errno != 0 {
		return -1, errno
	}
	// Access mode 3 (no read, no write) is free access, like O_WRONLY,
	// and refuses mmap like it: the file is opened O_WRONLY.
	acc := flags & unix.O_ACCMODE
	if acc == unix.O_ACCMODE {
		acc = unix.O_WRONLY
	}
	fd, err := unix.Open(d.path, acc|unix.O_CLOEXEC, 0)
	if err != nil {
		x.fsys.release(file, tid)
		return -1, fmt.Errorf("fs: reopen %s memory: %w", d.dev.Name(), err)
	}
	d.mu.Lock()
	at := lockBase + d.next
	d.next++
	d.mu.Unlock()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: at, Len: 1}
	if acc == unix.O_RDONLY {
		lk.Type = unix.F_RDLCK
	}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
		unix.Close(fd)
		x.fsys.release(file, tid)
		return -1, fmt.Errorf("fs: lock an open of %s: %w", d.dev.Name(), err)
	}
	d.mu.Lock()
	d.files[at] = file
	d.mu.Unlock()
	return fd, nil
}

// Ioctl serves ioctl(fd, cmd, arg) of task tid on its descriptor fd of
// device i: the result to return, or the errno.
func (x *Direct) Ioctl(i int, tid int32, fd int32, cmd uint32, arg uint64) (int64, syscall.Errno) {
	file, ok := x.file(i, tid, fd)
	if !ok {
		return 0, syscall.EBADF
	}
	res, errno := x.fsys.ioctl(context.Background(), file, x.fsys.directCaller(tid), cmd, arg, nil, nil)
	if errno != 0 {
		return 0, errno
	}
	if res < 0 {
		return 0, syscall.Errno(-res)
	}
	return int64(res), 0
}

// Flush runs the driver's flush for a close of tid's descriptor fd of
// device i, before the close goes ahead.
func (x *Direct) Flush(i int, tid int32, fd int32) {
	if file, ok := x.file(i, tid, fd); ok {
		x.fsys.flush(context.Background(), file, x.fsys.directCaller(tid))
	}
}

// Closed says a close went ahead: some open may have lost its last
// reference.
func (x *Direct) Closed() {
	select {
	case x.scan <- struct{}{}:
	default:
	}
}

// file finds the open behind tid's descriptor fd of device i from the
// lock its fdinfo lists.
func (x *Direct) file(i int, tid int32, fd int32) (*device.File, bool) {
	if i < 0 || i >= len(x.devs) {
		return nil, false
	}
	var buf [1024]byte
	n, err := readSmall(fmt.Sprintf("/proc/%d/fdinfo/%d", tid, fd), buf[:])
	if err != nil {
		return nil, false
	}
	at, ok := lockStart(buf[:n])
	if !ok {
		return nil, false
	}
	d := x.devs[i]
	d.mu.Lock()
	file, ok := d.files[at]
	d.mu.Unlock()
	return file, ok
}

func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Read(fd, buf)
}

// lockStart finds the start of the OFD lock from lockBase up in an
// fdinfo text ("lock:\t1: OFDLCK ADVISORY WRITE -1 00:01:2 START END").
func lockStart(info []byte) (int64, bool) {
	for line := range bytes.SplitSeq(info, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("lock:"))
		if !ok || !bytes.Contains(rest, []byte("OFDLCK")) {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 2 {
			continue
		}
		at, err := strconv.ParseInt(string(f[len(f)-2]), 10, 64)
		if err == nil && at >= lockBase {
			return at, true
		}
	}
	return 0, false
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
		}
		for _, d := range x.devs {
			x.releaseGone(d)
		}
	}
}

// releaseGone releases d's opens whose lock no longer exists: their open
// file description had its last reference dropped.
func (x *Direct) releaseGone(d *directDev) {
	d.mu.Lock()
	held := make([]int64, 0, len(d.files))
	for at := range d.files {
		held = append(held, at)
	}
	d.mu.Unlock()
	for _, at := range held {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Start: at, Len: 1}
		if err := unix.FcntlFlock(uintptr(d.probe), unix.F_OFD_GETLK, &lk); err != nil {
			x.log.WithError(err).Debug("asking for a direct open's lock")
			continue
		}
		if lk.Type != unix.F_UNLCK {
			continue
		}
		d.mu.Lock()
		file := d.files[at]
		delete(d.files, at)
		d.mu.Unlock()
		if file != nil {
			x.fsys.release(file, 0)
		}
	}
}

// Opens returns how many direct opens of device i are held (for tests).
func (x *Direct) Opens(i int) int {
	d := x.devs[i]
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.files)
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
