package exitguard

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const (
	pfExiting   = 0x4          // PF_EXITING in /proc/PID/stat's flags
	sigkillMask = 1 << (9 - 1) // SIGKILL in /proc/PID/status's masks
)

// parentExiting reports whether the guarded process is gone or on its way
// out. The guard must act before the process has closed its files, which
// is where it waits on its own mount for good, so the pidfd (readable
// only once every thread is done) comes too late. Signs, any of which
// will do: the guard was reparented; the leader is a zombie (it left
// before other threads); the leader is in do_exit (PF_EXITING); a SIGKILL
// is pending for the leader (an exit_group reached it while it waits
// uninterruptibly).
func parentExiting(pid int) bool {
	if os.Getppid() != pid {
		return true
	}
	st, err := readStat(pid)
	if err != nil {
		return true
	}
	if st.state == 'Z' || st.state == 'X' || st.flags&pfExiting != 0 {
		return true
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&sigkillMask != 0 {
			return true
		}
	}
	return false
}

type procStat struct {
	state byte
	ppid  int
	pgrp  int
	flags uint64
}

// readStat reads the fields after the command name, which may itself
// hold ')' and spaces: "STATE PPID PGRP SESSION TTY TPGID FLAGS ...".
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 7 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed stat %q", s)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("stat ppid: %w", err)
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, fmt.Errorf("stat pgrp: %w", err)
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat flags: %w", err)
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, flags: flags}, nil
}

func parentOf(pid int) (int, error) {
	st, err := readStat(pid)
	return st.ppid, err
}
