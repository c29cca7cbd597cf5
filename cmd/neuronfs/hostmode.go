package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/ns"
)

// Host mode: the FUSE tree is mounted privately and its nodes are bound
// onto this host's /dev and /sys, so containers can be given
// -v /dev/neuron0:/dev/neuron0. sysfs takes no new directories, so each
// sysfs parent (/sys/class, /sys/devices/virtual, /sys/module) is covered
// by a tmpfs replica of itself (ns.Overlay), with the driver's directory
// bound into it. New top-level entries the kernel adds to those parents
// meanwhile stay hidden until the daemon exits.

// hostMode holds mount's --host flags.
type hostMode struct {
	on       bool
	stateDir string
}

func (m *hostMode) register(fl *flag.FlagSet) {
	fl.BoolVar(&m.on, "host", false, "bind /dev/neuronN and the driver's sysfs onto this host (no MOUNTPOINT; undone on SIGINT/SIGTERM, or by 'neuronfs cleanup')")
	fl.StringVar(&m.stateDir, "state-dir", "/run/neuronfs", "host mode: where the private mount and the state file (host.json) live; made 0700, and refused unless only root can write it and its parents")
}

// hostSysfs are the driver's sysfs directories and the parents covered
// to place them.
var hostSysfs = []struct{ parent, name, src string }{
	{"/sys/class", "neuron_device", fs.ClassDir},
	{"/sys/devices/virtual", "neuron_device", fs.DevicesDir},
	{"/sys/module", "neuron", fs.ModuleDir},
}

// run serves the devices bound onto this host until a signal, or the
// private mount going away, undoes the binds. Its steps are the functions
// below it.
func (m *hostMode) run(h hostFlags, args []string) int {
	log, status, ok := checkHostMode(&h, args)
	if !ok {
		return status
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	dir, err := openStateDir(m.stateDir, true)
	if err != nil {
		return failLine("mount --host", err)
	}
	defer dir.Close()
	if err := checkHostFree(dir); err != nil {
		return failLine("mount --host", err)
	}
	sys, err := h.system(log)
	if err != nil {
		return failLine("mount --host", err)
	}
	defer h.leavePod()
	defer sys.Close()
	b, err := bindHost(dir, sys, h.fsOptions(log))
	if err != nil {
		return failLine("mount --host", err)
	}
	log.WithFields(logrus.Fields{"devices": len(sys.Devices), "instance": sys.Instance.Name, "state": b.st.file(),
		"mode": fmt.Sprintf("%04o", hostview.UdevMode)}).Info("devices bound onto the host, open to every local user as with the driver's udev rule")
	return b.serveUntil(sigs)
}

// checkHostMode answers the user's mistakes and checks the host can
// mount, and returns the daemon's logger; when ok is false, mount is over
// with status.
func checkHostMode(h *hostFlags, args []string) (log *logrus.Entry, status int, ok bool) {
	if len(args) != 0 {
		return nil, usageLine("mount", "--host takes no MOUNTPOINT"), false
	}
	if status, ok := requireRoot("mount --host"); !ok {
		return nil, status, false
	}
	if err := h.check(); err != nil {
		return nil, usageFail("mount", err), false
	}
	log, err := h.logger()
	if err == nil {
		err = preflight()
	}
	if err != nil {
		return nil, failLine("mount --host", err), false
	}
	return log, exitOK, true
}

// hostBinds is a host mode daemon's mount and what it placed on the host.
type hostBinds struct {
	st     *hostState
	reaper *reaper
	fsys   *fs.FS
	log    *logrus.Entry
}

// bindHost mounts the devices privately under dir and binds them onto
// the host, undoing what it did if a step fails.
func bindHost(dir *stateDir, sys *device.System, opts fs.Options) (*hostBinds, error) {
	for _, d := range sys.Devices {
		if _, err := os.Lstat("/dev/" + d.Name()); err == nil {
			return nil, fmt.Errorf("/dev/%s exists already (a real driver, or another emulator?)", d.Name())
		}
	}
	st, err := begin(dir, sys)
	if err != nil {
		return nil, err
	}
	b := &hostBinds{st: st, log: opts.Log}
	if b.reaper, err = startReaper(st.Mountpoint); err != nil {
		b.log.WithError(err).Warn("no reaper: after a SIGKILL, run 'neuronfs cleanup'")
	}
	if b.fsys, err = fs.Mount(sys, st.Mountpoint, opts); err != nil {
		b.reaper.stop()
		st.undo()
		return nil, mountError(err)
	}
	lowerOOMScore(b.log)
	if err := bindOntoHost(st, sys); err != nil {
		b.log.WithError(err).Debug("host binds failed; undoing")
		b.reaper.stop()
		st.undo()
		abortOnExit(b.fsys, b.log)
		return nil, err
	}
	return b, nil
}

// serveUntil serves until a signal comes or the private mount goes away,
// then undoes the binds and returns the daemon's status.
func (b *hostBinds) serveUntil(sigs <-chan os.Signal) int {
	done := make(chan struct{})
	go func() { b.fsys.Wait(); close(done) }()
	select {
	case s := <-sigs:
		b.log.WithField("signal", s).Info("undoing the host binds")
	case <-done:
		b.log.Warn("the private mount went away; undoing the host binds")
	}
	b.reaper.stop()
	status := exitOK
	// Not fsys.Unmount: it waits for the connection to end, which the
	// binds (and any process still holding a device) keep alive. undo
	// detaches the binds, then aborts and detaches the private mount.
	if err := b.st.undo(); err != nil {
		b.log.WithError(err).Error("undoing the host binds")
		status = exitFailure
	}
	abortOnExit(b.fsys, b.log)
	if status == exitOK {
		b.st.dir.removeIfMade()
	}
	return status
}

// checkHostFree refuses a host that a previous daemon still holds, and
// clears up after one that is gone and left no mounts behind (its empty
// node files and mount point may remain).
func checkHostFree(dir *stateDir) error {
	prev, err := loadHostState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if prev.alive() {
		return fmt.Errorf("a host mount is active (pid %d, %s); stop it first", prev.PID, prev.file())
	}
	left, err := prev.leftovers()
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("a previous host mount (pid %d) died and left %v mounted; run 'neuronfs cleanup --state-dir %s'", prev.PID, left, dir.given)
	}
	return prev.undo()
}

// begin creates the state file and the private mount point in dir.
func begin(dir *stateDir, sys *device.System) (*hostState, error) {
	pid := os.Getpid()
	start, err := procStart(pid)
	if err != nil {
		return nil, err
	}
	st := &hostState{
		PID: pid, Start: start, Instance: sys.Instance.Name,
		Mountpoint: filepath.Join(dir.path, strconv.Itoa(pid)),
		Changes:    []hostChange{},
		dir:        dir,
	}
	// The state exists before the mount point, so nothing is ever made
	// that cleanup could not find.
	if err := st.save(); err != nil {
		return nil, err
	}
	if err := dir.mkdir(strconv.Itoa(pid), 0o755); err != nil {
		dir.remove(hostStateFile, false)
		return nil, err
	}
	return st, nil
}

// bindOntoHost places the nodes and the sysfs directories, recording
// each change before making it.
func bindOntoHost(st *hostState, sys *device.System) error {
	for _, d := range sys.Devices {
		dst := "/dev/" + d.Name()
		if err := st.record(changeFile, dst); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, hostview.UdevMode)
		if err != nil {
			return err
		}
		f.Close()
		// The driver package's mode, 0666: every local user of the host
		// may use the devices, as with the real driver (hostview.UdevMode
		// says where the fact comes from).
		if err := os.Chmod(dst, hostview.UdevMode); err != nil { // past the umask
			return err
		}
		if err := st.record(changeBind, dst); err != nil {
			return err
		}
		src := filepath.Join(st.Mountpoint, fs.DevDir, d.Name())
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", src, dst, err)
		}
	}
	for _, s := range hostSysfs {
		if _, err := os.Lstat(filepath.Join(s.parent, s.name)); err == nil {
			return fmt.Errorf("%s/%s exists already (a real driver?)", s.parent, s.name)
		}
		if err := st.record(changeOverlay, s.parent); err != nil {
			return err
		}
		dir, err := ns.Overlay(s.parent)
		if err != nil {
			return err
		}
		if err := dir.BindDir(filepath.Join(st.Mountpoint, s.src), s.name); err != nil {
			return err
		}
	}
	return nil
}
