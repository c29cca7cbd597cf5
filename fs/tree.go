// Package fs serves the emulated devices through FUSE: the dev/ nodes with
// their ioctl bridge and the sys/ tree of the driver's sysfs files.
package fs

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"

	"github.com/neuronfs/neuronfs/internal/fuseuring"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Paths of the tree, relative to the mount point.
const (
	DevDir     = "dev"
	ClassDir   = "sys/class/neuron_device"
	DevicesDir = "sys/devices/virtual/neuron_device"
	ModuleDir  = "sys/module/neuron"
	// DMIDir holds the firmware's DMI identity of the instance, which
	// `run` shows at /sys/class/dmi/id.
	DMIDir = "sys/devices/virtual/dmi/id"
	// PCIRoot holds the PCI functions, at PCIRoot/pciDDDD:BB/DDDD:BB:SS.F
	// (device.Device.PCIPath), as the kernel places a root bus's functions.
	PCIRoot = "sys/devices"
	// PCIBusDevicesDir links each function's address to its directory.
	PCIBusDevicesDir = "sys/bus/pci/devices"
	// PCIDriverDir is the driver's PCI driver directory.
	PCIDriverDir = "sys/bus/pci/drivers/" + device.PCIDriverName
	// ControlDir holds neuronfs's own files (fault injection), which no
	// real host has.
	ControlDir = "neuronfs"
)

// FS is the mounted filesystem of one emulated host.
type FS struct {
	unmount func() error // Options.Unmount, for a mount made by Options.Mount
	sys     *device.System
	tgids   *tgidCache
	server  *fuse.Server
	root    *dirNode
	log     *logrus.Entry
	// mounted stamps every inode, as sysfs stamps its files at creation.
	mounted    time.Time
	mountpoint string
	rootFd     int // O_PATH of the root: reaches the tree even after a lazy unmount
	// abortPin is an O_PATH descriptor of the root that keeps the mount's
	// connection number ours for Abort (fusectl.go); -1 once the unmount
	// has ended the connection.
	abortPin atomic.Int32

	behalf *behalfTable // on-behalf opens: whom a daemon thread opens for

	noPassthrough bool // see Options.withoutPassthrough
	incoherent    bool // the mmap self-test failed
	// selfTestTid is the thread whose device open is the daemon's own
	// mmap self-test (selftest.go), 0 outside it.
	selfTestTid  atomic.Int32
	selfTestHold func() // see Options.selfTestHold

	// devIno maps the device nodes' inode numbers to device indexes, and
	// mountDev is the mount's device (major<<32 | minor, known once
	// mounted, while requests are already served), to recognise the
	// nodes' mappings in /proc/<pid>/maps.
	devIno   map[uint64]int
	mountDev atomic.Uint64
	// physIno recognises mappings of the physical-memory files (set
	// before serving, read-only after).
	physIno map[fileID]int
	// reaper punches raw memory (rawreap.go); nil until mounted, while
	// requests are already served.
	reaper atomic.Pointer[rawReaper]

	watch *watchdog      // the slow-request log (watchdog.go)
	usr1  chan os.Signal // SIGUSR1, caught from before the mount (diag.go)
	// unhookExit withdraws the abort that runs before a lock-order
	// violation ends the process.
	unhookExit func()

	// The FUSE transport (transport.go): its name, what waits for its
	// end, the io_uring transport or the setup of a failed io_uring
	// attempt (its queues end with the connection) and the default ioctl
	// budget (the raw reaper's waits).
	transport  string
	waitServed func()
	// endUnmounted ends an Unmounted FS's serving (CloseUnmounted).
	endUnmounted  func()
	ring          *fuseuring.Transport
	uringLeft     *fuseuring.Transport
	defaultBudget time.Duration
}

// NoPassthroughEnv, set to 1, mounts as on a kernel without FUSE
// passthrough (device files' mmap not coherent), to try what run does
// there on a kernel that has it.
const NoPassthroughEnv = "NEURONFS_NO_PASSTHROUGH"

// panicExit is the daemon's exit status after a handler panic.
const panicExit = 70

// Options tune the mount.
type Options struct {
	Debug bool // log every FUSE request
	Log   *logrus.Entry
	// DegradedMmap starts even when client mmaps would not share memory
	// with the daemon (no FUSE passthrough): every ioctl works, mapped
	// memory does not.
	DegradedMmap bool
	// OtherMmap starts without coherent mmap of the FUSE files, quietly:
	// the caller serves device mmaps another way where MmapCoherent says
	// they are not (run --device-fds, direct.go).
	OtherMmap bool
	// DumpOnSIGUSR1 writes every goroutine's stack to the log when the
	// process gets SIGUSR1, for as long as the mount is served (the
	// daemon sets it; see diag.go).
	DumpOnSIGUSR1 bool
	// Transport is the FUSE transport: auto (io_uring when the kernel
	// offers it), uring or classic; empty means $NEURONFS_FUSE_TRANSPORT,
	// else auto.
	Transport string
	// Mount, if set, mounts the connection in place of this process,
	// which may not (a testbed without root mounts from a user
	// namespace): it gets the mount options beyond the descriptor, root
	// mode and owner, and returns the /dev/fuse descriptor to serve; dir
	// is where this process sees the mount. Unmount then detaches it.
	Mount   func(opts []string) (int, error)
	Unmount func() error
	// withoutPassthrough opens device files without passthrough, as on a
	// kernel that lacks it (for testing the self-test).
	withoutPassthrough bool
	// selfTestHold runs while the self-test holds its device open (for
	// testing a daemon killed there).
	selfTestHold func()
}

// mountOptions are go-fuse's options for the mount; with debug it logs
// every request where the daemon's log goes.
func mountOptions(debug bool, log *logrus.Entry) fuse.MountOptions {
	return fuse.MountOptions{
		FsName:        "neuronfs",
		Name:          "neuronfs",
		Debug:         debug,
		Logger:        stdlog.New(log.Logger.Out, "", stdlog.LstdFlags|stdlog.Lmicroseconds),
		DisableXAttrs: true,
		MaxWrite:      maxWrite,
		MaxReadAhead:  4096,
	}
}

// Mount serves sys at dir and returns once the kernel answers requests.
func Mount(sys *device.System, dir string, opts Options) (*FS, error) {
	f := newFS(sys, opts)
	if err := f.mountAndServe(dir, opts); err != nil {
		f.tgids.close()
		f.releaseSIGUSR1()
		return nil, err
	}
	f.startDiagnostics(opts)
	f.mountpoint = dir
	if err := f.pinRoot(dir); err != nil {
		f.Unmount()
		return nil, err
	}
	f.hookExits(dir)
	disablePoll(dir)
	if err := f.selfTestMmap(dir, opts); err != nil {
		f.Unmount()
		return nil, err
	}
	// After the self-test: its mapping is the daemon's own.
	f.startRawReaper()
	return f, nil
}

// newFS is the daemon's state before anything is mounted.
func newFS(sys *device.System, opts Options) *FS {
	log := opts.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	now := time.Now()
	f := &FS{sys: sys, tgids: newTgidCache(), root: &dirNode{mtime: now}, log: log, mounted: now, behalf: newBehalfTable(), noPassthrough: opts.withoutPassthrough || os.Getenv(NoPassthroughEnv) == "1", physIno: physFiles(sys), selfTestHold: opts.selfTestHold}
	f.abortPin.Store(-1)
	f.watch = newWatchdog(f)
	f.defaultBudget = sys.Budget(0)
	f.catchSIGUSR1(opts)
	return f
}

// mountAndServe mounts the FUSE connection on dir and starts serving it
// over the transport opts asks for; on failure nothing stays mounted.
func (f *FS) mountAndServe(dir string, opts Options) error {
	transport, err := resolveTransport(opts.Transport)
	if err != nil {
		return err
	}
	var uringErr error
	if transport != TransportClassic {
		// Before the mount: INIT offers io_uring only if the kernel
		// allows it then.
		uringErr = prepareURing(f.log)
	}
	fd, err := f.mountConn(dir, opts)
	if err != nil {
		return fmt.Errorf("fs: mount %s: %w", dir, err)
	}
	// The tree never changes shape while mounted: let the kernel cache it.
	timeout := time.Hour
	nodeOpts := &gofs.Options{
		MountOptions: mountOptions(opts.Debug, f.log),
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		OnAdd:        func(ctx context.Context) { f.build(ctx) },
	}
	server, err := f.serve(fd, dir, gofs.NewNodeFS(f.root, nodeOpts), &nodeOpts.MountOptions, transport, uringErr)
	if err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		if !errors.As(err, new(errFDClosed)) {
			unix.Close(fd)
		}
		return fmt.Errorf("fs: serve %s: %w", dir, err)
	}
	f.server = server
	return nil
}

// pinRoot opens the mount's root, which names the connection (its
// device number) and keeps a descriptor Abort can use.
func (f *FS) pinRoot(dir string) error {
	var err error
	if f.rootFd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("fs: %s: %w", dir, err)
	}
	var st unix.Stat_t
	if unix.Fstat(f.rootFd, &st) == nil {
		f.mountDev.Store(uint64(unix.Major(st.Dev))<<32 | uint64(unix.Minor(st.Dev)))
	}
	if pin, err := unix.FcntlInt(uintptr(f.rootFd), unix.F_DUPFD_CLOEXEC, 0); err == nil {
		f.abortPin.Store(int32(pin))
	}
	return nil
}

// hookExits ends the daemon cleanly on the ways it can die mid-request.
func (f *FS) hookExits(dir string) {
	// A handler panic may leave a lock held: end the daemon cleanly rather
	// than serve on and hang callers behind it.
	f.sys.SetPanicHandler(func(p any) {
		f.log.WithField("panic", p).Error("stopping the daemon after a handler panic")
		f.Abort()
		os.Exit(panicExit)
	})
	// A lock-order violation (checked builds) ends the process too.
	f.unhookExit = lockrank.BeforeExit(func() {
		f.Abort()
		unix.Unmount(dir, unix.MNT_DETACH)
	})
}

// selfTestMmap checks that a mapping of the FUSE files shares memory
// with the daemon, and refuses the mount if not unless opts accept it.
func (f *FS) selfTestMmap(dir string, opts Options) error {
	err := f.checkMmapCoherence(dir)
	if err == nil {
		return nil
	}
	f.incoherent = true
	switch {
	case opts.OtherMmap:
		f.log.WithError(err).Debug("mmap of the FUSE files is not coherent")
	case !opts.DegradedMmap:
		return fmt.Errorf("fs: %s: %w (use --degraded-mmap to run without it)", dir, err)
	default:
		f.log.WithError(err).Warn("running with degraded mmap")
	}
	return nil
}

// mountConn mounts the connection at dir, or has opts.Mount do it, and
// returns the /dev/fuse descriptor to serve.
func (f *FS) mountConn(dir string, opts Options) (int, error) {
	if opts.Mount == nil {
		// allow_other: every user may use the devices;
		// default_permissions: the kernel enforces the sysfs modes
		// (0400, 0600...).
		return mountFUSE(dir, []string{"allow_other", "default_permissions"})
	}
	// Not allow_other: such a mount is used by the caller's user alone,
	// from outside the user namespace that owns it, which allow_other
	// would shut out.
	f.unmount = opts.Unmount
	return opts.Mount([]string{"default_permissions", fmt.Sprintf("max_read=%d", maxWrite)})
}

// MmapCoherent reports whether a client's mmap of a device file shares
// the daemon's memory (the mount's self-test passed).
func (f *FS) MmapCoherent() bool { return !f.incoherent }

// Unmount detaches the filesystem and waits until serving has stopped.
func (f *FS) Unmount() error {
	if f.unmount != nil {
		return f.unmountOther()
	}
	if f.unhookExit != nil {
		f.unhookExit()
	}
	// The root fds pin the mount; drop them first or unmounting never ends.
	if pin := f.abortPin.Swap(-1); pin >= 0 {
		unix.Close(int(pin))
	}
	if f.rootFd > 0 {
		unix.Close(f.rootFd)
		f.rootFd = 0
	}
	err := unix.Unmount(f.mountpoint, 0)
	busy := err == unix.EBUSY
	if busy {
		// Still in use (an open fd, a mapping): detach now; the kernel
		// finishes when the last user goes.
		f.repin()
		err = unix.Unmount(f.mountpoint, unix.MNT_DETACH)
	}
	if err == nil {
		done := make(chan struct{})
		go func() { f.waitServed(); close(done) }()
		if busy {
			// Serving goes on for those users; do not wait for them
			// forever. When this process exits they see ENOTCONN.
			select {
			case <-done:
			case <-time.After(time.Second):
			}
		} else {
			<-done
		}
	}
	f.stopRawReaper()
	f.tgids.close()
	return err
}

// unmountOther detaches a mount made by Options.Mount: its connection is
// ended first (nothing of a torn-down testbed waits on it), then the
// mounter lets it go.
func (f *FS) unmountOther() error {
	if f.unhookExit != nil {
		f.unhookExit()
	}
	f.Abort()
	if f.rootFd > 0 {
		unix.Close(f.rootFd)
		f.rootFd = 0
	}
	err := f.unmount()
	done := make(chan struct{})
	go func() { f.waitServed(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	f.stopRawReaper()
	f.tgids.close()
	return err
}

// DevicePath returns a path of device node i that stays valid after the
// mount point is lazily unmounted (for as long as f is served).
func (f *FS) DevicePath(i int) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s/neuron%d", f.rootFd, DevDir, i)
}

// OpenFor opens device node i as task tid would: the emulated driver sees
// tid (and its process) as the opener. The caller installs the descriptor
// in tid's process.
func (f *FS) OpenFor(i int, flags int, tid int32) (int, error) {
	return f.behalf.openAs(tid, func() (int, error) {
		return unix.Openat(f.rootFd, fmt.Sprintf("%s/neuron%d", DevDir, i), flags|unix.O_CLOEXEC, 0)
	})
}

// Wait blocks until the filesystem is unmounted by someone else.
func (f *FS) Wait() { f.waitServed() }

// caller identifies the task behind a FUSE request.
func (f *FS) caller(ctx context.Context) device.Caller {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return device.Caller{}
	}
	tid := f.behalf.caller(int32(c.Pid))
	return device.Caller{
		Tid:                tid,
		Tgid:               f.tgids.lookup(tid),
		FatalSignalPending: func() bool { return fatalSignalPending(tid) },
		Live:               true,
	}
}

// build lays out the tree: device nodes, class directory, device
// directories and the module directory.
func (f *FS) build(ctx context.Context) {
	f.devIno = map[uint64]int{}
	for _, d := range f.sys.Devices {
		n := &devNode{dev: d, fsys: f}
		f.add(ctx, DevDir+"/"+d.Name(), n, syscall.S_IFREG)
		f.devIno[n.StableAttr().Ino] = d.Index
	}
	for _, d := range SysfsDirs(f.sys) {
		for _, a := range d.Attrs {
			f.add(ctx, d.Path+"/"+a.Path, &attrNode{attr: a, mtime: f.mounted}, syscall.S_IFREG)
		}
		for _, l := range d.Links {
			f.addLink(ctx, d.Path+"/"+l.Path, l.Target)
		}
	}
	f.addDiagnostics(ctx)
}

// dir returns the directory at path, creating missing components.
func (f *FS) dir(ctx context.Context, path string) *gofs.Inode {
	cur := f.root.EmbeddedInode()
	for _, name := range strings.Split(path, "/") {
		next := cur.GetChild(name)
		if next == nil {
			next = cur.NewPersistentInode(ctx, &dirNode{mtime: f.mounted}, gofs.StableAttr{Mode: syscall.S_IFDIR})
			cur.AddChild(name, next, false)
		}
		cur = next
	}
	return cur
}

func (f *FS) add(ctx context.Context, path string, node gofs.InodeEmbedder, mode uint32) {
	i := strings.LastIndexByte(path, '/')
	parent := f.dir(ctx, path[:i])
	parent.AddChild(path[i+1:], parent.NewPersistentInode(ctx, node, gofs.StableAttr{Mode: mode}), false)
}

func (f *FS) addLink(ctx context.Context, path, target string) {
	f.add(ctx, path, &linkNode{target: []byte(target), mtime: f.mounted}, syscall.S_IFLNK)
}
