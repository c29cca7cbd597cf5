package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	id     uint64 // the mount ID
	point  string
	fstype string // "fuse.neuronfs", "tmpfs", ...
	source string
}

// neuronfs reports whether the mount is served by a neuronfs daemon.
func (m mountEntry) neuronfs() bool {
	return strings.HasPrefix(m.fstype, "fuse") && m.source == "neuronfs"
}

// readMounts parses /proc/self/mountinfo, in mount order.
func readMounts() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld != "-" || i+2 >= len(fields) || len(fields) < 5 {
				continue
			}
			var e mountEntry
			if _, err := fmt.Sscanf(fields[0], "%d", &e.id); err != nil {
				break
			}
			e.point, e.fstype, e.source = unescapeMount(fields[4]), fields[i+1], fields[i+2]
			out = append(out, e)
			break
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// topMountAt returns the last (visible) mount at point, if any.
func topMountAt(mounts []mountEntry, point string) (mountEntry, bool) {
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].point == point {
			return mounts[i], true
		}
	}
	return mountEntry{}, false
}

// fuseDead reports whether the FUSE mount pin pins has lost its daemon:
// the kernel then answers ENOTCONN at once. A daemon that does not answer
// within the timeout is not called dead (it may be busy); the probe then
// finishes on its own descriptor, whenever the kernel lets it.
func fuseDead(pin int, timeout time.Duration) bool {
	probe, err := unix.FcntlInt(uintptr(pin), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	res := make(chan error, 1)
	go func() {
		defer unix.Close(probe)
		var st unix.Statfs_t
		res <- unix.Fstatfs(probe, &st)
	}()
	select {
	case err := <-res:
		return err == unix.ENOTCONN
	case <-time.After(timeout):
		return false
	}
}

// procStart returns process pid's start time (clock ticks since boot),
// which tells a live daemon from a later process that reused its pid.
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// Fields after the command name (which may hold spaces and ')').
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// starttime is field 22 of stat; f[0] is field 3 (state).
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", fmt.Errorf("process %d is gone", pid)
	}
	return f[19], nil
}
