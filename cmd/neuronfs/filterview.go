package main

import (
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

// run's filter host view (--host-view=filter): the seccomp supervisor
// alone makes the emulated host, for an unprivileged container (no
// /dev/fuse, no user namespace, no capability). run itself is the daemon:
// the devices are served without a mount (fs.Unmounted), device
// descriptors are direct ones, and the paths of /dev/neuronN, the
// driver's sysfs and /proc/devices are answered from a shadow tree
// (hostview.Shadow). CMD runs under no_new_privs and the view's filter.

// runFilterView serves the host for CMD (args) and returns its status.
func runFilterView(h *hostFlags, u *userFlags, args []string) int {
	log, err := h.logger()
	if err != nil {
		return failLine("run", err)
	}
	sys, err := h.system(log)
	if err != nil {
		return failLine("run", err)
	}
	defer sys.CloseExecTrace()
	defer h.leavePod()
	fsys := fs.Unmounted(sys, h.fsOptions(log))
	direct, err := fsys.NewDirect()
	if err != nil {
		return failLine("run", err)
	}
	defer direct.Close()
	shadow, err := hostview.NewShadow(sys)
	if err != nil {
		return failLine("run", err)
	}
	defer shadow.Remove()
	if err := os.Setenv(hostview.ControlEnv, hostview.ControlPath); err != nil {
		return failLine("run", err)
	}
	cfg := chardev.Config{Major: sys.Major, Nodes: nodePaths(sys), Files: direct.Paths(), Open: direct.Open, Mmap: fsys.CheckMmap, Direct: direct, Paths: shadow, Log: log}
	return superviseView(cfg, u, args, log)
}

// nodePaths are the devices' /dev paths, by minor.
func nodePaths(sys *device.System) []string {
	var nodes []string
	for _, d := range sys.Devices {
		nodes = append(nodes, "/dev/"+d.Name())
	}
	return nodes
}

// superviseView starts CMD through the exec helper (which installs the
// view's filter and hands its listener back), serves the listener until
// CMD ends and returns CMD's status.
func superviseView(cfg chardev.Config, u *userFlags, args []string, log *logrus.Entry) int {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		log.WithError(err).Error("socketpair")
		return 1
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "supervisor"), os.NewFile(uintptr(pair[1]), "filter")
	defer ours.Close()
	self, err := os.Executable()
	if err != nil {
		theirs.Close()
		log.WithError(err).Error("cannot find this executable")
		return 1
	}
	helperArgs := append([]string{self, execCmd, fmt.Sprintf("--uid=%d", u.uid), fmt.Sprintf("--gid=%d", u.gid), "--view", "--"}, args...)
	wait, err := startKept(helperArgs, keepAsIs, u.uid, u.gid, theirs)
	theirs.Close()
	if err != nil {
		log.WithError(err).Error("cannot start the command")
		return 127
	}
	lowerOOMScore(log)
	if cfg.Listener, err = receiveFD(ours); err != nil {
		log.WithError(err).Debug("no seccomp listener from the command's launcher")
		return wait()
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := chardev.Serve(cfg); err != nil {
			log.WithError(err).Error("seccomp supervisor stopped")
		}
	}()
	status := wait()
	select {
	case <-served:
	case <-time.After(time.Second):
	}
	return status
}
