package hostview

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/chardev"
)

// Shadow is the emulated host of run's filter host view
// (chardev.PathView): no mount, no namespace, no node on disk. A private
// directory holds a shadow of every emulated path, at the same path
// under it: the driver's sysfs as directories, symlinks (with the
// driver's relative targets, which resolve inside the shadow) and
// regular files standing for the attributes (whose content the
// supervisor renders at each open), /proc/devices with the driver's
// line, and the devices' names in /dev. A directory that lists both
// (/sys/class, /dev...) is a shadow too, merged: the host's entries are
// symlinks to the real ones, taken when the view is built.
type Shadow struct {
	root string
	// owned are the emulated paths: every path under one is the
	// shadow's. merged are the directories whose listing is merged;
	// their other entries are the host's.
	owned, merged map[string]bool
	devices       map[string]int // /dev/neuronN -> minor
	attrs         []chardev.Attribute
	attrPaths     map[string]int // a shadow file -> its attribute
	// dirs are the directories (and attribute templates) made.
	dirs map[string]bool
}

var _ chardev.PathView = (*Shadow)(nil)

// shadowNodes is where the view's emulated paths are, other than the
// sysfs directories of fs.SysfsDirs (by their Path, absolute).
var shadowPaths = struct{ procDevices, devCharDir, dmiClassLink string }{
	procDevices:  "/proc/devices",
	devCharDir:   "/sys/dev/char",
	dmiClassLink: "/sys/class/dmi/id",
}

// NewShadow builds the view of sys in a new private directory.
func NewShadow(sys *device.System) (*Shadow, error) {
	removeStaleShadows()
	root, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", shadowPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("hostview: shadow tree: %w", err)
	}
	v := &Shadow{root: root, owned: map[string]bool{}, merged: map[string]bool{}, devices: map[string]int{}, attrPaths: map[string]int{}, dirs: map[string]bool{}}
	if err := v.build(sys); err != nil {
		v.Remove()
		return nil, fmt.Errorf("hostview: shadow tree: %w", err)
	}
	return v, nil
}

// shadowPrefix names the shadow trees in $TMPDIR: shadowPrefix, the
// daemon's pid, "-", a random part.
const shadowPrefix = "neuronfs-view-"

// removeStaleShadows deletes the trees of daemons that are gone without
// removing theirs (killed), where this user may.
func removeStaleShadows() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), shadowPrefix+"*-*"))
	for _, d := range dirs {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), shadowPrefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || unix.Kill(n, 0) != unix.ESRCH {
			continue
		}
		os.RemoveAll(d)
	}
}

// Remove deletes the shadow tree.
func (v *Shadow) Remove() error { return os.RemoveAll(v.root) }

func (v *Shadow) build(sys *device.System) error {
	for _, d := range fs.SysfsDirs(sys) {
		if err := v.addSysfsDir(d); err != nil {
			return err
		}
	}
	for i, d := range sys.Devices {
		p := "/dev/" + d.Name()
		v.devices[p] = i
		if err := v.file(p, nil, 0o666); err != nil {
			return err
		}
		link := fmt.Sprintf("%s/%d:%d", shadowPaths.devCharDir, sys.Major, i)
		if err := v.link(link, "../../devices/virtual/neuron_device/"+d.Name()); err != nil {
			return err
		}
	}
	if err := v.link(shadowPaths.dmiClassLink, "../../devices/virtual/dmi/id"); err != nil {
		return err
	}
	host, err := os.ReadFile(shadowPaths.procDevices)
	if err != nil {
		return err
	}
	if err := v.file(shadowPaths.procDevices, ProcDevices(host, sys.Major), 0o444); err != nil {
		return err
	}
	return v.mergeAll()
}

// virtualPath is where sysfs directory d shows: its own path, but the
// control directory at ControlPath.
func virtualPath(d fs.SysfsDir) string {
	if d.Path == fs.ControlDir {
		return ControlPath
	}
	return "/" + d.Path
}

// addSysfsDir shadows one directory of the driver's sysfs. The PCI bus's
// device directory is the host's, with the functions' links added.
func (v *Shadow) addSysfsDir(d fs.SysfsDir) error {
	dir := virtualPath(d)
	v.owned[dir] = d.Path != fs.PCIBusDevicesDir
	if err := v.mkdirs(v.root + dir); err != nil {
		return err
	}
	for _, a := range d.Attrs {
		if err := v.attr(dir+"/"+a.Path, a, dir == ControlPath); err != nil {
			return err
		}
	}
	for _, l := range d.Links {
		if err := v.link(dir+"/"+l.Path, l.Target); err != nil {
			return err
		}
	}
	return nil
}

// attr makes the shadow file of attribute a: its mode, and the size sysfs
// reports (a page, or a binary attribute's own); own for the control
// files (chardev.Attribute.Own). Files of one mode and size are hard
// links of one file: a host has thousands of attributes, and a link is
// one call where a file of its own is four. The supervisor knows them by
// path.
func (v *Shadow) attr(path string, a device.Attr, own bool) error {
	size := int64(4096)
	if a.Size != 0 {
		size = int64(a.Size)
	}
	tmpl, err := v.template(a.Mode&0o777, size)
	if err != nil {
		return err
	}
	if err := v.mkdirs(filepath.Dir(v.root + path)); err != nil {
		return err
	}
	if err := os.Link(tmpl, v.root+path); err != nil {
		return err
	}
	at := chardev.Attribute{Mode: a.Mode, Show: a.Show, UnprivilegedLen: a.UnprivilegedLen, Own: own}
	if a.Store != nil {
		at.Store = func(data []byte) unix.Errno { return a.Store(data) }
	}
	v.attrPaths[v.root+path] = len(v.attrs)
	v.attrs = append(v.attrs, at)
	return nil
}

// template is the file that attributes of mode and size link to, in the
// tree's root (which no emulated path reaches).
func (v *Shadow) template(mode uint32, size int64) (string, error) {
	p := fmt.Sprintf("%s/.attr-%o-%d", v.root, mode, size)
	if v.dirs[p] {
		return p, nil
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return "", err
	}
	if err := os.Truncate(p, size); err != nil {
		return "", err
	}
	if err := os.Chmod(p, os.FileMode(mode)); err != nil {
		return "", err
	}
	v.dirs[p] = true
	return p, nil
}

// mkdirs is os.MkdirAll, remembering what it made.
func (v *Shadow) mkdirs(dir string) error {
	if v.dirs[dir] {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	v.dirs[dir] = true
	return nil
}

// link makes an emulated symlink; it is owned unless under an owned
// directory already.
func (v *Shadow) link(path, target string) error {
	if !v.underOwned(path) {
		v.owned[path] = true
	}
	if err := v.mkdirs(filepath.Dir(v.root + path)); err != nil {
		return err
	}
	return os.Symlink(target, v.root+path)
}

// file makes an emulated regular file (an owned path, or a device's name).
func (v *Shadow) file(path string, content []byte, mode os.FileMode) error {
	if _, dev := v.devices[path]; !dev {
		v.owned[path] = true
	}
	if err := v.mkdirs(filepath.Dir(v.root + path)); err != nil {
		return err
	}
	return os.WriteFile(v.root+path, content, mode)
}

// underOwned reports whether path is inside an owned path.
func (v *Shadow) underOwned(path string) bool {
	for p := parent(path); p != ""; p = parent(p) {
		if v.owned[p] {
			return true
		}
	}
	return false
}

// parent is path's directory, "" for "/".
func parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	switch {
	case path == "/" || i < 0:
		return ""
	case i == 0:
		return "/"
	}
	return path[:i]
}
