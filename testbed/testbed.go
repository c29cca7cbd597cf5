package testbed

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/exitguard"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Testbed is one emulated host, served by the test process for one test.
type Testbed struct {
	t      testing.TB
	root   string     // where this process sees the host's tree
	dir    string     // the mount point, where a command's launcher attaches it
	um     *userMount // the mounter, without root; else nil
	sys    *device.System
	fsys   *fs.FS
	layout hostview.Layout
	log    *logrus.Entry
	self   string     // this executable, which launches the commands
	direct *fs.Direct // device descriptors without FUSE passthrough, or nil
	ln     *net.UnixListener
	sock   string
	guard  *exitguard.Guard
	// The filter view (filterview.go): the supervisor answers the
	// commands' paths from shadow, nothing is mounted; noMount says why.
	shadow  *hostview.Shadow
	noMount string

	mu       lockrank.Mutex[lockrank.Testbed] // guards children, closed and adding to served
	children map[int]int                      // pid -> pidfd of commands being served
	closed   bool
	served   sync.WaitGroup
}

// guardMargin is how long before the test's deadline the guard aborts the
// mounts: the testing package's timer panics then, and a FUSE connection
// served by a dying process must be aborted before it exits.
const guardMargin = 2 * time.Second

// New starts an emulated host for the test and tears it down when the
// test ends. Where the host cannot be mounted (no /dev/fuse; without
// root, no user namespace, as in an unprivileged container) it serves the
// filter view instead (FilterView). It fails the test if no host starts,
// with one line saying why; SkipWithoutHost or
// $NEURONFS_SKIP_WITHOUT_HOST=1 make it skip instead, unless
// NEURONFS_REQUIRE_FUSE=1.
func New(t testing.TB, opts ...Option) *Testbed {
	t.Helper()
	var c config
	for _, o := range opts {
		if err := o(&c); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	tb, err := start(t, c)
	if err != nil {
		requireHost(t, "testbed: "+err.Error(), c.skipWithoutHost, os.Getenv)
	}
	return tb
}

func start(t testing.TB, c config) (*Testbed, error) {
	g, err := guardFor(t)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	log := logrus.NewEntry(l).WithField("testbed", t.Name())
	sys, err := newSystem(c, log)
	if err != nil {
		return nil, err
	}
	tb := &Testbed{t: t, sys: sys, layout: hostview.LayoutOf(sys), log: log, self: self, guard: g, children: map[int]int{}}
	reg, err := tb.serveHost(t.TempDir())
	if err != nil {
		sys.Close()
		return nil, err
	}
	sockReg, sockDir, err := tb.listen()
	if err != nil {
		reg.Release()
		tb.stopHost()
		sys.Close()
		return nil, err
	}
	go tb.accept()
	t.Cleanup(func() {
		defer sockReg.Release()
		defer os.RemoveAll(sockDir)
		if err := tb.close(); err != nil {
			t.Errorf("testbed: %v", err)
		}
		reg.Release()
	})
	return tb, nil
}

// serveHost mounts the host under tmp where this machine allows it, else
// serves the filter view (filterview.go); the registration has the exit
// guard undo it if the test binary dies first.
func (tb *Testbed) serveHost(tmp string) (exitguard.Reg, error) {
	why := filterReason()
	if why == "" {
		reg, err := tb.mount(tmp)
		if err == nil || !refused(err) {
			return reg, err
		}
		why = err.Error()
	}
	return tb.serveFilter(why)
}

// mount mounts the host at tmp/host, from this process as root, else
// through a mounter (usermount.go).
func (tb *Testbed) mount(tmp string) (exitguard.Reg, error) {
	root := filepath.Join(tmp, "host")
	if err := os.Mkdir(root, 0o755); err != nil {
		return exitguard.Reg{}, err
	}
	// The classic transport: a test binary may die at any moment, and
	// only a mount it serves that way can always be aborted after it
	// (see internal/exitguard). Without FUSE passthrough (Linux < 6.9) a command's device
	// descriptors are the devices' memory files, served by the
	// supervisor, as under `run --device-fds auto`.
	fsys, at, um, err := mountHost(tb.sys, tb.self, root, fs.Options{Log: tb.log, Transport: fs.TransportClassic, OtherMmap: true})
	if err != nil {
		return exitguard.Reg{}, err
	}
	tb.root, tb.dir, tb.um, tb.fsys = at, root, um, fsys
	reg, err := tb.guardMount()
	if err == nil && !fsys.MmapCoherent() {
		tb.direct, err = fsys.NewDirect()
	}
	if err != nil {
		reg.Release()
		tb.stopHost()
		return exitguard.Reg{}, err
	}
	return reg, nil
}

// listen opens the socket the commands' launchers reach the testbed on.
// The registration has the exit guard remove it if the test binary dies
// first.
func (tb *Testbed) listen() (exitguard.Reg, string, error) {
	// A short path of its own: a socket's path has at most 107 bytes,
	// and the test's temporary directory is named after the test.
	sockDir, err := os.MkdirTemp("", "neuronfs-tb-")
	if err != nil {
		return exitguard.Reg{}, "", err
	}
	tb.sock = filepath.Join(sockDir, "launch")
	tb.ln, err = net.ListenUnix("unixpacket", &net.UnixAddr{Name: tb.sock, Net: "unixpacket"})
	if err != nil {
		os.RemoveAll(sockDir)
		return exitguard.Reg{}, "", err
	}
	reg, err := tb.guard.Command("rm", "-rf", sockDir)
	if err != nil {
		tb.log.WithError(err).Warn("the exit guard will not remove the launch socket")
	}
	return reg, sockDir, nil
}

// guardFor is the exit guard, told to abort the testbed's mounts a
// margin before t's deadline.
func guardFor(t testing.TB) (*exitguard.Guard, error) {
	g, err := exitguard.Shared()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			if err := g.AbortAt(at.Add(-guardMargin)); err != nil {
				return nil, err
			}
		}
	}
	return g, nil
}

// newSystem builds the emulated host c describes, on a free major and
// the backing $NEURONFS_MEMORY_BACKING names unless c names one, with
// c's faults applied.
func newSystem(c config, log *logrus.Entry) (*device.System, error) {
	var err error
	if c.dev.Major == 0 {
		if c.dev.Major, err = hostview.FreeMajor(); err != nil {
			return nil, err
		}
	}
	c.dev.Log = log
	if env := os.Getenv(device.BackingEnv); env != "" && c.dev.Backing == (device.Backing{}) {
		if c.dev.Backing, err = device.ParseBacking(env); err != nil {
			return nil, fmt.Errorf("$%s: %w", device.BackingEnv, err)
		}
	}
	sys, err := device.NewSystem(c.dev)
	if err != nil {
		return nil, err
	}
	if err := sys.Faults().Apply(c.faults); err != nil {
		sys.Close()
		return nil, err
	}
	return sys, nil
}

// Root is the host's tree: dev/neuronN (the device files), sys/ (the
// driver's sysfs, PCI functions, DMI) and neuronfs/ (the control
// directory). On a kernel without FUSE passthrough (before 6.9) a mapping
// of Root's device files does not share the device's memory; a
// Command's does.
//
// Under the filter view (FilterView) there is no tree in the test
// process: Root fails the test with one line.
func (tb *Testbed) Root() string {
	tb.t.Helper()
	tb.needTree("Root")
	return tb.root
}

// Control is the control directory (docs/control.md); under the filter
// view it fails the test as Root does (State and InjectFaults still work).
func (tb *Testbed) Control() string {
	tb.t.Helper()
	tb.needTree("Control")
	return filepath.Join(tb.root, fs.ControlDir)
}

// System is the emulated driver serving the host, for tests that reach
// past the control interface.
func (tb *Testbed) System() *device.System { return tb.sys }

// close kills the commands still running, then stops serving the host.
func (tb *Testbed) close() error {
	tb.ln.Close()
	tb.mu.Lock()
	tb.closed = true
	for _, pidfd := range tb.children {
		unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	}
	tb.mu.Unlock()
	done := make(chan struct{})
	go func() { tb.served.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(tb.sys.FlushBudget()):
		tb.log.Warn("a command's supervisor did not stop; unmounting anyway")
	}
	err := tb.stopHost()
	tb.sys.Close()
	return err
}

// stopHost ends the host's mount, or the filter view's serving.
func (tb *Testbed) stopHost() error {
	if tb.direct != nil {
		tb.direct.Close()
	}
	if tb.shadow != nil {
		tb.fsys.CloseUnmounted()
		return tb.shadow.Remove()
	}
	err := tb.fsys.Unmount()
	// Ends the connection for good, whoever still holds a file of it.
	tb.fsys.Abort()
	if err != nil {
		return fmt.Errorf("unmount: %w", err)
	}
	return nil
}
