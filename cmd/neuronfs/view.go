package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/ns"
)

// stagingMount is where the FUSE filesystem is mounted inside the new
// /dev while the view is assembled; it is detached before CMD starts.
const stagingMount = "/dev/.neuronfs"

// udevMode is the mode the driver package's udev rule gives the nodes.
const udevMode = 0o666

// buildView mounts the devices and places them at the real paths. With
// chardev, /dev/neuronN are character nodes (opens are redirected by the
// seccomp supervisor), /proc/devices lists the major, /sys/dev/char links
// the nodes and DMI names the instance; otherwise /dev/neuronN are the
// FUSE files themselves. Rootless (in a user namespace, where mknod of a
// device is not allowed) the character nodes are stand-ins (ns.StandIn).
func buildView(sys *device.System, h hostFlags, chardev, otherMmap, rootless bool) (*fs.FS, error) {
	skipDev := []string{}
	for _, d := range sys.Devices {
		skipDev = append(skipDev, d.Name())
	}
	devDir, err := ns.Overlay("/dev", skipDev...)
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
	for _, d := range sys.Devices {
		switch {
		case chardev && rootless:
			err = devDir.StandIn(d.Name(), udevMode)
		case chardev:
			err = devDir.Mknod(d.Name(), udevMode, sys.Major, uint32(d.Index))
		default:
			err = devDir.BindFile(filepath.Join(stagingMount, fs.DevDir, d.Name()), d.Name(), udevMode)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := addPCIFunctions(sys); err != nil {
		return nil, err
	}
	classSkip, virtualSkip := []string{"neuron_device"}, []string{"neuron_device"}
	if chardev {
		classSkip = append(classSkip, "dmi")
		virtualSkip = append(virtualSkip, "dmi")
	}
	overlays := []struct {
		parent, name, src string
		skip              []string
	}{
		{"/sys/class", "neuron_device", fs.ClassDir, classSkip},
		{"/sys/devices/virtual", "neuron_device", fs.DevicesDir, virtualSkip},
		{"/sys/module", "neuron", fs.ModuleDir, []string{"neuron"}},
	}
	dirs := map[string]*ns.Dir{}
	for _, o := range overlays {
		d, err := ns.Overlay(o.parent, o.skip...)
		if err != nil {
			return nil, err
		}
		if err := d.BindDir(filepath.Join(stagingMount, o.src), o.name); err != nil {
			return nil, err
		}
		dirs[o.parent] = d
	}
	if chardev {
		if err := addCharacterDeviceFacts(sys, devDir, dirs["/sys/class"], dirs["/sys/devices/virtual"]); err != nil {
			return nil, err
		}
	}
	// The binds keep the FUSE connection; the staging mount can go.
	return fsys, ns.Detach(stagingMount)
}

// addCharacterDeviceFacts makes the kernel's traces of a character driver:
// the /proc/devices line, /sys/dev/char links and the DMI product name.
func addCharacterDeviceFacts(sys *device.System, scratch, class, virtual *ns.Dir) error {
	host, err := os.ReadFile("/proc/devices")
	if err != nil {
		return err
	}
	if err := scratch.ReplaceFile("/proc/devices", procDevices(host, sys.Major)); err != nil {
		return err
	}
	var skip []string
	for _, d := range sys.Devices {
		skip = append(skip, fmt.Sprintf("%d:%d", sys.Major, d.Index))
	}
	devChar, err := ns.Overlay("/sys/dev/char", skip...)
	if err != nil {
		return err
	}
	for _, d := range sys.Devices {
		if err := devChar.Symlink("../../devices/virtual/neuron_device/"+d.Name(), fmt.Sprintf("%d:%d", sys.Major, d.Index)); err != nil {
			return err
		}
	}
	if err := virtual.BindDir(filepath.Join(stagingMount, fs.DMIDir), "dmi/id"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(class.Path, "dmi"), 0o755); err != nil {
		return err
	}
	return class.Symlink("../../devices/virtual/dmi/id", "dmi/id")
}

// procDevices inserts "<major> neuron" into the character-device list of
// a /proc/devices text, in major order.
func procDevices(host []byte, major uint32) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(host))
	inChar, done := false, false
	for sc.Scan() {
		line := sc.Text()
		if !done && inChar {
			f := strings.Fields(line)
			n, err := strconv.Atoi(strings.TrimSpace(firstOr(f, "")))
			if line == "" || err != nil || n > int(major) {
				fmt.Fprintf(&out, "%3d neuron\n", major)
				done = true
			}
		}
		if strings.HasPrefix(line, "Character devices:") {
			inChar = true
		}
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}

func firstOr(f []string, def string) string {
	if len(f) == 0 {
		return def
	}
	return f[0]
}
