package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// descendant is a process under another, with the parent it had when
// found.
type descendant struct{ pid, parent int }

// descendants lists the processes under pid (not pid itself), read from
// /proc: every process's parent, then the tree walked from pid. A process
// started during the scan may be missed; its parent is not, and once that
// dies it becomes a child of the subreaper scanning again.
func descendants(pid int) []descendant {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []descendant
	next := []int{pid}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		for _, c := range children[p] {
			out = append(out, descendant{c, p})
			next = append(next, c)
		}
	}
	return out
}

// kill sends SIGKILL to d if it is still the process found: its pid is
// pinned with a pidfd, then its parent checked, so a pid reused meanwhile
// by a process elsewhere is left alone.
func (d descendant) kill() {
	fd, err := unix.PidfdOpen(d.pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if pp, ok := parentOf(d.pid); ok && (pp == d.parent || pp == os.Getpid()) {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// parentOf reads process pid's parent from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which may itself hold ')':
	// state, then the parent.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}
