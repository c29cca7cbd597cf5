package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The state file of host mode records, before each change to the host,
// what is about to be done, so that 'neuronfs cleanup' can undo exactly
// that after the daemon was killed, and a second daemon can tell that the
// host is taken.

const hostStateFile = "host.json"

// Kinds of hostChange.
const (
	changeFile    = "file"    // an empty file created as a bind target
	changeBind    = "bind"    // a bind of a FUSE node over path
	changeOverlay = "overlay" // a tmpfs replica mounted over a sysfs directory
)

type hostChange struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
}

type hostState struct {
	PID        int          `json:"pid"`
	Start      string       `json:"start"`      // the daemon's start time, see procStart
	Mountpoint string       `json:"mountpoint"` // the private FUSE mount
	Instance   string       `json:"instance"`
	Changes    []hostChange `json:"changes"` // in the order they were made
	dir        *stateDir
}

// loadHostState reads the state file of dir and checks that it names
// only what host mode can have made there (see check).
func loadHostState(dir *stateDir) (*hostState, error) {
	b, err := dir.readFile(hostStateFile)
	if err != nil {
		return nil, err
	}
	s := &hostState{dir: dir}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", s.file(), err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w: refusing to undo it (remove the file by hand if it is stale)", s.file(), err)
	}
	return s, nil
}

// file is the state file's path, for messages.
func (s *hostState) file() string { return s.dir.file(hostStateFile) }

// save writes the state atomically and never through a link (see
// stateDir.writeFile).
func (s *hostState) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return s.dir.writeFile(hostStateFile, append(b, '\n'))
}

// record notes a change before it is made.
func (s *hostState) record(kind, path string) error {
	s.Changes = append(s.Changes, hostChange{kind, path})
	return s.save()
}

// alive reports whether the daemon that wrote the state still runs.
func (s *hostState) alive() bool {
	start, err := procStart(s.PID)
	return err == nil && start == s.Start
}

// leftovers lists the recorded mounts still in place.
func (s *hostState) leftovers() ([]string, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range s.Changes {
		if c.Kind == changeFile {
			continue
		}
		if m, ok := topMountAt(mounts, c.Path); ok && ours(c.Kind, m) {
			out = append(out, c.Path)
		}
	}
	if m, ok := topMountAt(mounts, s.Mountpoint); ok && m.neuronfs() {
		out = append(out, s.Mountpoint)
	}
	return out, nil
}

// ours reports whether mount m is the kind of mount a change made: only
// those are undone, never what someone mounted there afterwards.
func ours(kind string, m mountEntry) bool {
	switch kind {
	case changeBind:
		return m.neuronfs()
	case changeOverlay:
		return m.fstype == "tmpfs" && m.source == "tmpfs"
	}
	return false
}

// undo reverts the recorded changes, newest first, then detaches the
// private mount if it is still there (its daemon is gone or leaving) and
// removes the state file. It goes on past failures and
// returns them all.
func (s *hostState) undo() error {
	var errs []error
	mounts, err := readMounts()
	if err != nil {
		return err
	}
	for i := len(s.Changes) - 1; i >= 0; i-- {
		c := s.Changes[i]
		switch c.Kind {
		case changeBind, changeOverlay:
			// A path may carry our mount more than once only if a
			// step was retried; unmount while the top one is ours.
			for {
				m, ok := topMountAt(mounts, c.Path)
				if !ok || !ours(c.Kind, m) {
					break
				}
				if err := unix.Unmount(c.Path, unix.MNT_DETACH); err != nil {
					errs = append(errs, fmt.Errorf("unmount %s: %w", c.Path, err))
					break
				}
				if mounts, err = readMounts(); err != nil {
					return err
				}
			}
		case changeFile:
			if _, mounted := topMountAt(mounts, c.Path); mounted {
				errs = append(errs, fmt.Errorf("%s: still mounted over, not removed", c.Path))
				continue
			}
			if st, err := os.Lstat(c.Path); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
				if err := os.Remove(c.Path); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if _, err := detachDeadMount(s.Mountpoint, 0); err != nil {
		errs = append(errs, err)
	}
	// check made sure the mount point is this directory's entry <pid>.
	if err := s.dir.remove(filepath.Base(s.Mountpoint), true); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := s.dir.remove(hostStateFile, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
