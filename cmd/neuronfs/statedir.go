package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The state directory of host mode holds what root acts on later: the
// state file names paths that cleanup unmounts and removes. So it must be
// root's alone. Every directory from / down to it is owned by root and
// writable by no one else (a sticky one such as /tmp is fine: others
// cannot rename root's entries in it), the directory itself too, and the
// files in it are opened relative to it and never through a symbolic
// link. Anything else is refused, not repaired.

// stateDir is an open, checked state directory.
type stateDir struct {
	given string // the path asked for, absolute
	path  string // the same with its symbolic links resolved
	fd    int
	made  bool // made by this process (removeIfMade)
}

// openStateDir checks dir and opens it; with create it first makes it
// (mode 0700) if missing. A missing dir without create is
// os.ErrNotExist.
func openStateDir(dir string, create bool) (*stateDir, error) {
	given, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	made := false
	if create {
		if err := os.MkdirAll(filepath.Dir(given), 0o755); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", given, err)
		}
		err := os.Mkdir(given, 0o700)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("state directory %s: %w", given, err)
		}
		made = err == nil
	}
	real, err := filepath.EvalSymlinks(given)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", given, err)
	}
	// Every directory on the way: once they are all root's alone, nobody
	// else can swap one between this check and the open below.
	var want unix.Stat_t
	for p := real; ; p = filepath.Dir(p) {
		if err := unix.Lstat(p, &want); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", given, err)
		}
		if err := rootOnly(p, &want, p == real); err != nil {
			if p == real {
				return nil, fmt.Errorf("state directory %s: %w", given, err)
			}
			return nil, fmt.Errorf("state directory %s: its parent %w", given, err)
		}
		if p == "/" {
			break
		}
	}
	if err := unix.Lstat(real, &want); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", given, err)
	}
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", given, err)
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("state directory %s: replaced while it was checked", given)
	}
	return &stateDir{given: given, path: real, fd: fd, made: made}, nil
}

// rootOnly says why directory p (with st) is not root's alone; a sticky
// bit excuses group and other write access only above the state
// directory itself.
func rootOnly(p string, st *unix.Stat_t, self bool) error {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", p)
	}
	if st.Uid != 0 {
		return fmt.Errorf("%s is owned by uid %d, not root: host mode needs a directory only root can write", p, st.Uid)
	}
	sticky := st.Mode&unix.S_ISVTX != 0 && !self
	if st.Mode&0o022 != 0 && !sticky {
		return fmt.Errorf("%s has mode %04o, writable by group or others: host mode needs a directory only root can write", p, st.Mode&0o7777)
	}
	return nil
}

func (d *stateDir) Close() error { return unix.Close(d.fd) }

// file is the full path of name in the directory, for messages.
func (d *stateDir) file(name string) string { return filepath.Join(d.path, name) }

// readFile reads a regular file of root's in the directory, never
// through a link (nor blocking on a FIFO).
func (d *stateDir) readFile(name string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.file(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.file(name))
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: d.file(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("%s: not a regular file only root can write (mode %o, uid %d): refused", d.file(name), st.Mode, st.Uid)
	}
	return io.ReadAll(f)
}

// writeFile replaces name with b atomically: a new file (never an
// existing one, never through a link) renamed over it, so a kill mid-write
// leaves the previous content, never a torn file.
func (d *stateDir) writeFile(name string, b []byte) error {
	tmp := name + ".tmp"
	// A leftover of a killed write: unlinking removes a link, not its target.
	if err := unix.Unlinkat(d.fd, tmp, 0); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: d.file(tmp), Err: err}
	}
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: d.file(tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.file(tmp))
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("write %s: %w", d.file(name), err)
	}
	return nil
}

// mkdir makes directory name in the state directory.
func (d *stateDir) mkdir(name string, mode uint32) error {
	if err := unix.Mkdirat(d.fd, name, mode); err != nil {
		return &os.PathError{Op: "mkdir", Path: d.file(name), Err: err}
	}
	return nil
}

// remove removes name (a directory with dir), gone already being fine.
func (d *stateDir) remove(name string, dir bool) error {
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(d.fd, name, flags); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: d.file(name), Err: err}
	}
	return nil
}

// removeIfMade removes the directory when this process made it and it is
// empty again: a stopped host mount leaves no trace of itself. A
// directory that held anything else (or existed before) stays.
func (d *stateDir) removeIfMade() {
	if d.made {
		unix.Rmdir(d.path)
	}
}
