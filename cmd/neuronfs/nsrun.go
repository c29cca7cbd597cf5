package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/chardev"
)

// nsRun is the namespace child of run: the daemon that serves the
// devices and runs CMD. cmdNsRun's steps are its methods.
type nsRun struct {
	flags    runFlags
	rootless bool
	cmd      []string // CMD and its arguments
	log      *logrus.Entry
	sys      *device.System
	fsys     *fs.FS
}

// newNsRunFlags registers the child's flags: run's own (runFlags, which
// run relays) and what run tells it besides.
func newNsRunFlags(n *nsRun) *flag.FlagSet {
	fl := newFlagSet(nsRunCmd)
	n.flags.register(fl)
	fl.BoolVar(&n.rootless, "rootless", false, "")
	return fl
}

func cmdNsRun(args []string) int {
	var n nsRun
	fl := newNsRunFlags(&n)
	if status, ok := parseFlags(nsRunCmd, fl, args); !ok {
		return status
	}
	n.cmd = fl.Args()
	if err := n.buildHost(); err != nil {
		return failLine("run", err)
	}
	defer n.sys.CloseExecTrace() // the daemon exits without closing sys
	defer n.flags.host.leavePod()
	if err := n.mountView(); err != nil {
		return failLine("run", err)
	}
	if n.flags.noChardev {
		return n.runKept()
	}
	defer abortOnExit(n.fsys, n.log)
	direct, err := n.openDirect()
	if err != nil {
		return failLine("run", err)
	}
	if direct != nil {
		defer direct.Close()
	}
	return n.runSupervised(direct)
}

// buildHost builds the logger and the emulated host the flags describe.
func (n *nsRun) buildHost() error {
	if n.flags.noChardev {
		n.flags.deviceFDs = deviceFDsFUSE
	}
	var err error
	if n.log, err = n.flags.host.logger(); err != nil {
		return err
	}
	n.sys, err = n.flags.host.system(n.log)
	return err
}

// mountView mounts the devices and places them where CMD looks.
func (n *nsRun) mountView() error {
	var err error
	n.fsys, err = buildView(n.sys, n.flags.host, !n.flags.noChardev, n.flags.deviceFDs != deviceFDsFUSE, n.rootless)
	switch {
	case err == nil:
		return nil
	case n.rootless:
		return rootlessMountError(err)
	}
	return mountError(err)
}

// runKept runs CMD without the seccomp supervisor (--no-chardev): the
// keeper starts it and stops it and its descendants if this daemon dies
// (keeper.go).
func (n *nsRun) runKept() int {
	u := n.flags.user
	as := keepAsIs
	switch {
	case n.rootless:
		as = keepUserns
	case u.uid != os.Geteuid() || u.gid != os.Getegid():
		as = keepCred
	}
	status := 0
	if wait, err := startKept(n.cmd, as, u.uid, u.gid); err != nil {
		n.log.WithError(err).Error("cannot start the command's keeper")
		status = 127
	} else {
		lowerOOMScore(n.log) // after the fork: CMD keeps its own score
		status = wait()
	}
	abortOnExit(n.fsys, n.log)
	return status
}

// openDirect settles what a device descriptor is (--device-fds auto:
// FUSE where its mmap is coherent) and opens the devices' memory files
// when the supervisor's descriptors are asked for (nil otherwise).
func (n *nsRun) openDirect() (*fs.Direct, error) {
	if n.flags.deviceFDs == deviceFDsAuto {
		n.flags.deviceFDs = deviceFDsSupervisor
		if n.fsys.MmapCoherent() {
			n.flags.deviceFDs = deviceFDsFUSE
		}
		n.log.Debugf("device descriptors: %s", n.flags.deviceFDs)
	}
	if n.flags.deviceFDs != deviceFDsSupervisor {
		return nil, nil
	}
	return n.fsys.NewDirect()
}

// runSupervised starts CMD under the seccomp filter, serves the opens
// and ioctls the filter sends here, and returns CMD's status.
func (n *nsRun) runSupervised(direct *fs.Direct) int {
	// CMD starts through the exec helper, which installs the seccomp
	// filter, hands its listener back over a socket, drops to the user
	// and execs CMD.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		n.log.WithError(err).Error("socketpair")
		return 1
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "supervisor"), os.NewFile(uintptr(pair[1]), "filter")
	wait, err := n.startLauncher(theirs, direct != nil)
	theirs.Close()
	if err != nil {
		ours.Close()
		n.log.WithError(err).Error("cannot start the command")
		return 127
	}
	lowerOOMScore(n.log) // after the fork: CMD keeps its own score
	listener, err := receiveFD(ours)
	ours.Close()
	if err != nil {
		// The launcher failed before handing it over and said why.
		n.log.WithError(err).Debug("no seccomp listener from the command's launcher")
		return wait()
	}
	served := n.serve(n.supervisorConfig(listener, direct))
	status := wait()
	// Let the supervisor finish what it is doing (an on-behalf open ends
	// with a close on the mount); a daemonized grandchild may keep it busy
	// for good, so not forever.
	select {
	case <-served:
	case <-time.After(time.Second):
	}
	return status
}

// startLauncher starts the exec helper with the filter's end of the
// socket. Rootless, the helper starts as the user inside (asUserInside),
// with no capability: the filter then needs no_new_privs. The keeper
// starts it, and stops CMD and its descendants if this daemon dies
// (keeper.go).
func (n *nsRun) startLauncher(filter *os.File, direct bool) (func() int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this executable: %w", err)
	}
	u := n.flags.user
	e := execFlags{uid: u.uid, gid: u.gid, direct: direct, noNewPrivs: n.rootless}
	argv := append(append([]string{self, execCmd}, e.args()...), "--")
	argv = append(argv, n.cmd...)
	as := keepAsIs
	if n.rootless {
		as = keepUserns
	}
	return startKept(argv, as, u.uid, u.gid, filter)
}

// supervisorConfig tells the supervisor which paths are the devices and
// how to open them for CMD: the FUSE files, or the memory files direct
// holds.
func (n *nsRun) supervisorConfig(listener int, direct *fs.Direct) chardev.Config {
	var nodes, fuseNodes []string
	for _, d := range n.sys.Devices {
		nodes = append(nodes, "/dev/"+d.Name())
		fuseNodes = append(fuseNodes, n.fsys.DevicePath(d.Index))
	}
	cfg := chardev.Config{
		Listener: listener,
		Major:    n.sys.Major,
		Nodes:    nodes,
		Files:    fuseNodes,
		Open:     n.fsys.OpenFor,
		Mmap:     n.fsys.CheckMmap,
		Log:      n.log,
	}
	if direct != nil {
		cfg.Files, cfg.Open, cfg.Direct = direct.Paths(), direct.Open, direct
	}
	return cfg
}

// serve runs the seccomp supervisor until its listener ends; the channel
// closes when it has.
func (n *nsRun) serve(cfg chardev.Config) <-chan struct{} {
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := chardev.Serve(cfg); err != nil {
			n.log.WithError(err).Error("seccomp supervisor stopped")
		}
	}()
	return served
}

// abortOnExit ends the FUSE connection before the process exits, so no
// daemon thread stays waiting on its own mount (see fs.FS.Abort).
func abortOnExit(fsys *fs.FS, log *logrus.Entry) {
	if err := fsys.Abort(); err != nil {
		log.WithError(err).Warn("cannot abort the FUSE connection at exit")
	}
}

// receiveFD reads one descriptor passed with SCM_RIGHTS.
func receiveFD(sock *os.File) (int, error) { return hostview.ReceiveFD(int(sock.Fd())) }
