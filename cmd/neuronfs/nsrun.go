package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/ns"
)

// stagingMount is where the FUSE filesystem is mounted inside the new
// /dev while the view is assembled; it is detached before CMD starts.
const stagingMount = "/dev/.neuronfs"

func cmdNsRun(args []string) int {
	fl := flag.NewFlagSet(nsRunCmd, flag.ContinueOnError)
	var h hostFlags
	var u userFlags
	h.register(fl)
	u.register(fl)
	if err := fl.Parse(args); err != nil {
		return 2
	}
	log, err := h.logger()
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs:", err)
		return 2
	}
	sys, err := h.system(log)
	if err != nil {
		log.WithError(err).Error("cannot build the emulated host")
		return 1
	}
	if err := buildView(sys, h, log); err != nil {
		log.WithError(err).Error("cannot build the device view")
		return 1
	}
	cmd := exec.Command(fl.Arg(0), fl.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if u.uid != os.Geteuid() || u.gid != os.Getegid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	}
	return runForwardingSignals(cmd, 127)
}

// buildView mounts the devices and places them at the real paths.
func buildView(sys *device.System, h hostFlags, log *logrus.Entry) error {
	devDir, err := ns.Overlay("/dev")
	if err != nil {
		return err
	}
	if err := os.Mkdir(stagingMount, 0o700); err != nil {
		return err
	}
	if _, err := fs.Mount(sys, stagingMount, h.fsOptions(log)); err != nil {
		return err
	}
	for _, d := range sys.Devices {
		if err := devDir.BindFile(filepath.Join(stagingMount, fs.DevDir, d.Name()), d.Name(), 0o666); err != nil {
			return err
		}
	}
	for _, place := range []struct{ parent, name, src string }{
		{"/sys/class", "neuron_device", fs.ClassDir},
		{"/sys/devices/virtual", "neuron_device", fs.DevicesDir},
		{"/sys/module", "neuron", fs.ModuleDir},
	} {
		d, err := ns.Overlay(place.parent)
		if err != nil {
			return err
		}
		if err := d.BindDir(filepath.Join(stagingMount, place.src), place.name); err != nil {
			return err
		}
	}
	// The binds keep the FUSE connection; the staging mount can go.
	return ns.Detach(stagingMount)
}
