package main

import (
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/chardev"
)

func cmdNsRun(args []string) int {
	fl := newFlagSet(nsRunCmd)
	var h hostFlags
	var u userFlags
	h.register(fl)
	u.register(fl)
	noChardev := fl.Bool("no-chardev", false, "")
	deviceFDs := deviceFDsFlag(deviceFDsFUSE)
	fl.Var(&deviceFDs, "device-fds", "")
	rootless := fl.Bool("rootless", false, "")
	if status, ok := parseFlags(nsRunCmd, fl, args); !ok {
		return status
	}
	if *noChardev {
		deviceFDs = deviceFDsFUSE
	}
	log, err := h.logger()
	if err != nil {
		return failLine("run", err)
	}
	sys, err := h.system(log)
	if err != nil {
		return failLine("run", err)
	}
	defer sys.CloseExecTrace() // the daemon exits without closing sys
	defer h.leavePod()
	fsys, err := buildView(sys, h, !*noChardev, deviceFDs != deviceFDsFUSE, *rootless)
	if err != nil {
		if *rootless {
			return failLine("run", rootlessMountError(err))
		}
		return failLine("run", mountError(err))
	}
	if *noChardev {
		as := keepAsIs
		switch {
		case *rootless:
			as = keepUserns
		case u.uid != os.Geteuid() || u.gid != os.Getegid():
			as = keepCred
		}
		status := 0
		// The keeper starts CMD and stops it and its descendants if this
		// daemon dies (keeper.go).
		if wait, err := startKept(fl.Args(), as, u.uid, u.gid); err != nil {
			log.WithError(err).Error("cannot start the command's keeper")
			status = 127
		} else {
			lowerOOMScore(log) // after the fork: CMD keeps its own score
			status = wait()
		}
		abortOnExit(fsys, log)
		return status
	}
	defer abortOnExit(fsys, log)
	if deviceFDs == deviceFDsAuto {
		deviceFDs = deviceFDsSupervisor
		if fsys.MmapCoherent() {
			deviceFDs = deviceFDsFUSE
		}
		log.Debugf("device descriptors: %s", deviceFDs)
	}
	var direct *fs.Direct
	if deviceFDs == deviceFDsSupervisor {
		if direct, err = fsys.NewDirect(); err != nil {
			return failLine("run", err)
		}
		defer direct.Close()
	}

	// CMD starts through the exec helper, which installs the seccomp
	// filter, hands its listener back over a socket, drops to the user
	// and execs CMD.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		log.WithError(err).Error("socketpair")
		return 1
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "supervisor"), os.NewFile(uintptr(pair[1]), "filter")
	self, err := os.Executable()
	if err != nil {
		log.WithError(err).Error("cannot find this executable")
		return 1
	}
	// Rootless, the helper starts as the user inside (asUserInside), with
	// no capability: the filter then needs no_new_privs. The keeper
	// starts it, and stops CMD and its descendants if this daemon dies
	// (keeper.go).
	helperArgs := append([]string{self, execCmd, fmt.Sprintf("--uid=%d", u.uid), fmt.Sprintf("--gid=%d", u.gid), fmt.Sprintf("--direct=%v", direct != nil), fmt.Sprintf("--no-new-privs=%v", *rootless), "--"}, fl.Args()...)
	as := keepAsIs
	if *rootless {
		as = keepUserns
	}
	wait, err := startKept(helperArgs, as, u.uid, u.gid, theirs)
	theirs.Close()
	if err != nil {
		log.WithError(err).Error("cannot start the command")
		return 127
	}
	lowerOOMScore(log) // after the fork: CMD keeps its own score
	listener, err := receiveFD(ours)
	ours.Close()
	if err != nil {
		// The launcher failed before handing it over and said why.
		log.WithError(err).Debug("no seccomp listener from the command's launcher")
		return wait()
	}
	var nodes, fuseNodes []string
	for _, d := range sys.Devices {
		nodes = append(nodes, "/dev/"+d.Name())
		fuseNodes = append(fuseNodes, fsys.DevicePath(d.Index))
	}
	cfg := chardev.Config{
		Listener: listener,
		Major:    sys.Major,
		Nodes:    nodes,
		Files:    fuseNodes,
		Open:     fsys.OpenFor,
		Mmap:     fsys.CheckMmap,
		Log:      log,
	}
	if direct != nil {
		cfg.Files, cfg.Open, cfg.Direct = direct.Paths(), direct.Open, direct
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		err := chardev.Serve(cfg)
		if err != nil {
			log.WithError(err).Error("seccomp supervisor stopped")
		}
	}()
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

// abortOnExit ends the FUSE connection before the process exits, so no
// daemon thread stays waiting on its own mount (see fs.FS.Abort).
func abortOnExit(fsys *fs.FS, log *logrus.Entry) {
	if err := fsys.Abort(); err != nil {
		log.WithError(err).Warn("cannot abort the FUSE connection at exit")
	}
}

// receiveFD reads one descriptor passed with SCM_RIGHTS.
func receiveFD(sock *os.File) (int, error) { return hostview.ReceiveFD(int(sock.Fd())) }
