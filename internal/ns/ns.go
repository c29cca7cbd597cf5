// Package ns builds the private view of /dev and /sys that `neuronfs run`
// gives its command: the host's entries bound back over tmpfs replicas,
// plus the emulated driver's nodes and directories from the FUSE mount.
// It must run in a private mount namespace; the host is never touched.
package ns

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Overlay replaces dir with a tmpfs that shows the same entries as before
// (each bound back from the original, except those named in skip) and
// returns a handle to add more.
func Overlay(dir string, skip ...string) (*Dir, error) {
	orig, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ns: open %s: %w", dir, err)
	}
	defer unix.Close(orig)
	origPath := fmt.Sprintf("/proc/self/fd/%d", orig)
	entries, err := os.ReadDir(origPath)
	if err != nil {
		return nil, fmt.Errorf("ns: read %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("ns: stat %s: %w", dir, err)
	}
	opts := fmt.Sprintf("mode=%o", st.Mode&0o7777)
	// In a user namespace the owner may have no id here (the host's root
	// seen from a rootless run); tmpfs refuses such an owner, so the
	// replica is then owned by whoever mounts it.
	if mapped("/proc/self/uid_map", st.Uid) && mapped("/proc/self/gid_map", st.Gid) {
		opts += fmt.Sprintf(",uid=%d,gid=%d", st.Uid, st.Gid)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID, opts); err != nil {
		return nil, fmt.Errorf("ns: tmpfs over %s: %w", dir, err)
	}
	d := &Dir{Path: dir}
	for _, e := range entries {
		if slices.Contains(skip, e.Name()) {
			continue
		}
		if err := d.bindBack(filepath.Join(origPath, e.Name()), e.Name()); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Dir is a tmpfs replica that more entries can be added to.
type Dir struct{ Path string }

func (d *Dir) bindBack(src, name string) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		// Entries can vanish between readdir and here (hotplug).
		return nil
	}
	dst := filepath.Join(d.Path, name)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := os.Readlink(src)
		if err != nil {
			return nil
		}
		return os.Symlink(target, dst)
	case unix.S_IFDIR:
		if err := os.Mkdir(dst, os.FileMode(st.Mode&0o777)); err != nil {
			return fmt.Errorf("ns: mkdir %s: %w", dst, err)
		}
		return bind(src, dst, true)
	default:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("ns: create %s: %w", dst, err)
		}
		f.Close()
		return bind(src, dst, false)
	}
}

// BindDir makes name inside d a recursive bind of src.
func (d *Dir) BindDir(src, name string) error {
	dst := filepath.Join(d.Path, name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("ns: mkdir %s: %w", dst, err)
	}
	return bind(src, dst, true)
}

// BindFile makes name inside d a bind of the file src (a bind, not a
// symlink, so /proc/self/fd and /proc/self/maps show the path in d).
func (d *Dir) BindFile(src, name string, mode os.FileMode) error {
	dst := filepath.Join(d.Path, name)
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, mode)
	if err != nil {
		return fmt.Errorf("ns: create %s: %w", dst, err)
	}
	f.Close()
	return bind(src, dst, false)
}

func bind(src, dst string, recursive bool) error {
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(src, dst, "", flags, ""); err != nil {
		return fmt.Errorf("ns: bind %s on %s: %w", src, dst, err)
	}
	return nil
}

// Detach lazily unmounts path and removes the directory.
func Detach(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("ns: unmount %s: %w", path, err)
	}
	return os.Remove(path)
}

// ReplaceFile shows content at path (an existing file, e.g. in /proc) by
// bind-mounting a file of the replica d over it and then unlinking that
// file: the mount keeps it, and nothing is written where the host sees.
func (d *Dir) ReplaceFile(path string, content []byte) error {
	src := filepath.Join(d.Path, ".neuronfs-"+filepath.Base(path))
	if err := os.WriteFile(src, content, 0o444); err != nil {
		return fmt.Errorf("ns: stage %s: %w", path, err)
	}
	defer os.Remove(src)
	return bind(src, path, false)
}

// Mknod creates a character node name in d.
func (d *Dir) Mknod(name string, mode uint32, major, minor uint32) error {
	dst := filepath.Join(d.Path, name)
	if err := unix.Mknod(dst, unix.S_IFCHR|mode, int(unix.Mkdev(major, minor))); err != nil {
		return fmt.Errorf("ns: mknod %s: %w", dst, err)
	}
	// mknod honours the umask; the mode must be exactly what udev sets.
	return unix.Chmod(dst, mode)
}

// StandIn creates name in d as the stand-in of a character node where
// mknod is not allowed (in a user namespace): a whiteout, the one
// character node (0:0) anybody may create, with mode. It stats as a
// character device of its own inode; its open fails (no driver has
// major 0, and a user namespace's tmpfs is nodev), so opens must be
// redirected (internal/chardev) like those of a real node.
func (d *Dir) StandIn(name string, mode uint32) error {
	dst := filepath.Join(d.Path, name)
	if err := unix.Mknod(dst, unix.S_IFCHR|mode, 0); err != nil {
		return fmt.Errorf("ns: stand-in node %s: %w", dst, err)
	}
	return unix.Chmod(dst, mode)
}

// Symlink creates name -> target in d.
func (d *Dir) Symlink(target, name string) error {
	return os.Symlink(target, filepath.Join(d.Path, name))
}

// WriteFile creates name (and its parent directories) in d with content.
func (d *Dir) WriteFile(name string, content []byte, mode os.FileMode) error {
	dst := filepath.Join(d.Path, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, content, mode)
}
