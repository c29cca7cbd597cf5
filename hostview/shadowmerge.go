package hostview

import (
	"os"
	"path/filepath"

	"github.com/neuronfs/neuronfs/internal/chardev"
)

// mergeAll marks as merged every directory on the way to an emulated path
// whose real counterpart lacks the next name (a directory that has it
// lists it already), and adds the host's entries to each: symlinks to
// the real ones.
func (v *Shadow) mergeAll() error {
	var emulated []string
	for p := range v.owned {
		emulated = append(emulated, p)
	}
	for p := range v.devices {
		emulated = append(emulated, p)
	}
	for _, p := range emulated {
		for child, dir := p, parent(p); dir != ""; child, dir = dir, parent(dir) {
			if _, err := os.Lstat(child); err == nil {
				break
			}
			if v.owned[dir] {
				break
			}
			v.merged[dir] = true
		}
	}
	for dir := range v.merged {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // no such directory on the host: ours alone
		}
		for _, e := range entries {
			dst := filepath.Join(v.root+dir, e.Name())
			if _, err := os.Lstat(dst); err == nil {
				continue // the view's own
			}
			if err := os.Symlink(filepath.Join(dir, e.Name()), dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// Root is the shadow tree's directory.
func (v *Shadow) Root() string { return v.root }

// Route says what path names in the view.
func (v *Shadow) Route(path string) chardev.Route {
	if minor, ok := v.devices[path]; ok {
		return chardev.Route{Kind: chardev.RouteDevice, Minor: minor, Shadow: v.root + path}
	}
	if v.merged[path] {
		return chardev.Route{Kind: chardev.RouteShadow, Shadow: v.root + path}
	}
	for p := path; p != ""; p = parent(p) {
		if v.owned[p] {
			return chardev.Route{Kind: chardev.RouteShadow, Shadow: v.root + path, Own: p == ControlPath}
		}
	}
	return chardev.Route{}
}

// Attribute finds the attribute whose shadow file is at path (resolved).
func (v *Shadow) Attribute(path string) (int, bool) {
	i, ok := v.attrPaths[path]
	return i, ok
}

// Attr is attribute i.
func (v *Shadow) Attr(i int) chardev.Attribute { return v.attrs[i] }
