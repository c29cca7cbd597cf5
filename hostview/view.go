package hostview

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/ns"
)

// UdevMode is the mode the driver's package gives the nodes: every local
// user may open them. The driver sets none itself (its device class has no
// devnode callback, which leaves the kernel's 0600 root:root); the
// package's DKMS pre-install script installs a udev rule matching
// KERNEL=="neuron*" with MODE="0666" and no group. Source: src/preinstall,
// run as PRE_INSTALL by src/dkms.conf, in the published 2.25.4.0 package
// (github.com/wombelix/aws-neuron-driver, also in its
// archive/rpm/aws-neuronx-dkms-2.25.4.0.noarch.rpm); src/README.md gives
// the same rule for a manual install.
const UdevMode = 0o666

// OverlayDev replaces /dev with a replica that leaves room for the
// devices' nodes; call it first, in a private mount namespace.
func OverlayDev(l Layout) (*ns.Dir, error) {
	return ns.Overlay("/dev", l.Devices...)
}

// Build places the emulated host served at src (a neuronfs mount root)
// at the real paths of this mount namespace, /dev being devDir
// (OverlayDev). With chardev, /dev/neuronN are character nodes (opens are
// redirected by the seccomp supervisor), /proc/devices lists the major,
// /sys/dev/char links the nodes and DMI names the instance; otherwise
// /dev/neuronN are the FUSE files themselves. Rootless (in a user
// namespace, where mknod of a device is not allowed) the character nodes
// are stand-ins (ns.Dir.StandIn). The control directory is bound at
// ControlPath either way.
func Build(l Layout, devDir *ns.Dir, src string, chardev, rootless bool) error {
	for i, name := range l.Devices {
		var err error
		switch {
		case chardev && rootless:
			err = devDir.StandIn(name, UdevMode)
		case chardev:
			err = devDir.Mknod(name, UdevMode, l.Major, uint32(i))
		default:
			err = devDir.BindFile(filepath.Join(src, fs.DevDir, name), name, UdevMode)
		}
		if err != nil {
			return err
		}
	}
	if err := devDir.BindDir(filepath.Join(src, fs.ControlDir), filepath.Base(ControlPath)); err != nil {
		return err
	}
	if err := addPCIFunctions(l, src); err != nil {
		return err
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
			return err
		}
		if err := d.BindDir(filepath.Join(src, o.src), o.name); err != nil {
			return err
		}
		dirs[o.parent] = d
	}
	if chardev {
		return addCharacterDeviceFacts(l, src, devDir, dirs["/sys/class"], dirs["/sys/devices/virtual"])
	}
	return nil
}

// addCharacterDeviceFacts makes the kernel's traces of a character driver:
// the /proc/devices line, /sys/dev/char links and the DMI product name.
func addCharacterDeviceFacts(l Layout, src string, scratch, class, virtual *ns.Dir) error {
	host, err := os.ReadFile("/proc/devices")
	if err != nil {
		return err
	}
	if err := scratch.ReplaceFile("/proc/devices", ProcDevices(host, l.Major)); err != nil {
		return err
	}
	var skip []string
	for i := range l.Devices {
		skip = append(skip, fmt.Sprintf("%d:%d", l.Major, i))
	}
	devChar, err := ns.Overlay("/sys/dev/char", skip...)
	if err != nil {
		return err
	}
	for i, name := range l.Devices {
		if err := devChar.Symlink("../../devices/virtual/neuron_device/"+name, fmt.Sprintf("%d:%d", l.Major, i)); err != nil {
			return err
		}
	}
	if err := virtual.BindDir(filepath.Join(src, fs.DMIDir), "dmi/id"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(class.Path, "dmi"), 0o755); err != nil {
		return err
	}
	return class.Symlink("../../devices/virtual/dmi/id", "dmi/id")
}

// ProcDevices inserts "<major> neuron" into the character-device list of
// a /proc/devices text, in major order.
func ProcDevices(host []byte, major uint32) []byte {
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
