package main

import (
	"os"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/ns"
)

// stagingMount is where the FUSE filesystem is mounted inside the new
// /dev while the view is assembled; it is detached before CMD starts.
const stagingMount = "/dev/.neuronfs"

// buildView mounts the devices and places them at the real paths
// (hostview.Build), and tells CMD where the control directory is.
func buildView(sys *device.System, h hostFlags, chardev, otherMmap, rootless bool) (*fs.FS, error) {
	layout := hostview.LayoutOf(sys)
	devDir, err := hostview.OverlayDev(layout)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(stagingMount, 0o700); err != nil {
		return nil, err
	}
	log, _ := h.logger()
	opts := h.fsOptions(log)
	opts.OtherMmap = otherMmap
	fsys, err := fs.Mount(sys, stagingMount, opts)
	if err != nil {
		return nil, err
	}
	if err := hostview.Build(layout, devDir, stagingMount, chardev, rootless); err != nil {
		return nil, err
	}
	// CMD and what it starts inherit it (the launcher execs with this
	// environment).
	if err := os.Setenv(hostview.ControlEnv, hostview.ControlPath); err != nil {
		return nil, err
	}
	// The binds keep the FUSE connection; the staging mount can go.
	return fsys, ns.Detach(stagingMount)
}
