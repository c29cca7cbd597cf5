package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// A state file is read back by root (a second daemon, cleanup) and acted
// on: paths are unmounted and removed. Host mode only ever makes the
// entries below, so a state file naming anything else did not come from
// it and none of it is undone.

// check reports the first thing s names that host mode cannot have made:
// the private mount point is the state directory's entry <pid>, files and
// binds are /dev/neuronN, overlays are the three sysfs parents.
func (s *hostState) check() error {
	if s.PID <= 0 {
		return fmt.Errorf("pid %d", s.PID)
	}
	pid := strconv.Itoa(s.PID)
	if s.Mountpoint != filepath.Join(s.dir.path, pid) {
		return fmt.Errorf("mount point %q is not %s", s.Mountpoint, filepath.Join(s.dir.path, pid))
	}
	for _, c := range s.Changes {
		ok := false
		switch c.Kind {
		case changeFile, changeBind:
			ok = isHostNode(c.Path)
		case changeOverlay:
			ok = isHostSysfsParent(c.Path)
		}
		if !ok {
			return fmt.Errorf("a %q change of %q, which host mode never makes", c.Kind, c.Path)
		}
	}
	return nil
}

// isHostNode reports whether p is /dev/neuronN, N a device index written
// as the driver writes it.
func isHostNode(p string) bool {
	n, ok := strings.CutPrefix(p, "/dev/neuron")
	if !ok || n == "" || len(n) > 3 || (n[0] == '0' && n != "0") {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isHostSysfsParent(p string) bool {
	for _, s := range hostSysfs {
		if p == s.parent {
			return true
		}
	}
	return false
}
