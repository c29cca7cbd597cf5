package exitguard

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

const (
	// pollInterval is how often the guard looks at its parent: the
	// parent's exit may wait on its own mount from the first poll on.
	pollInterval = 50 * time.Millisecond
	// pruneEvery polls drop the registrations of processes that ended.
	pruneEvery = 20
	// killBudget bounds the wait for killed processes before the undo
	// commands run; cmdBudget bounds each command.
	killBudget = 10 * time.Second
	cmdBudget  = 10 * time.Second
)

// request is one msg for the guard's loop, which alone owns the
// registrations; pidfd comes with a join.
type request struct {
	m     msg
	pidfd int
	done  chan error
}

type guard struct {
	parent int
	log    *logrus.Entry
	mounts map[uint64]mountEntry
	procs  map[uint64]proc
	cmds   map[uint64][]string
	nextID uint64 // for joins, counting down from the top: never a parent's ID
	// deadline fires when the parent's announced death is near (AbortAt).
	deadline *time.Timer
	// holder shares the parent's file table (Guard.HoldFiles); it goes
	// last, once the parent's mounts are aborted.
	holder *proc
}

// proc is a registered process. A process that leads a process group of
// its own (a test's client started with Setpgid) goes with its group:
// what it started is its to end, and ends with it.
type proc struct {
	pidfd int
	pid   int
}

// kill ends p, and its group if it leads one. The group is read while p
// lives, when its pid (the group's ID) cannot name another process.
func (p proc) kill() {
	if st, err := readStat(p.pid); err == nil && st.pgrp == p.pid && !ended(p.pidfd) {
		unix.Kill(-p.pid, unix.SIGKILL)
	}
	unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
}

// serve is the guard process: parentPID is the pid it guards.
func serve(parentPID string) int {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	entry := logrus.NewEntry(log).WithField("guard", "neuronfs exit guard")
	parent, err := strconv.Atoi(parentPID)
	if err != nil {
		entry.WithError(err).Error("bad parent pid")
		return 2
	}
	// Only the parent's end is ours to watch; a terminal's signals are
	// for the parent.
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGPIPE)
	unix.Chdir("/")
	g := &guard{parent: parent, log: entry, mounts: map[uint64]mountEntry{}, procs: map[uint64]proc{}, cmds: map[uint64][]string{}, nextID: ^uint64(0)}

	reqs := make(chan request)
	go readParent(reqs)
	var sockDir string
	if ln, err := net.FileListener(os.NewFile(3, "join")); err == nil {
		if addr, ok := ln.Addr().(*net.UnixAddr); ok {
			sockDir = filepath.Dir(addr.Name)
		}
		go acceptJoins(ln, parent, reqs)
	}
	defer func() {
		if sockDir != "" {
			os.RemoveAll(sockDir)
		}
	}()

	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for n := 0; ; n++ {
		var deadline <-chan time.Time
		if g.deadline != nil {
			deadline = g.deadline.C
		}
		select {
		case <-deadline:
			g.deadline = nil
			g.abortMounts(g.log.WithField("parent", g.parent), "the parent's deadline is near")
		case r := <-reqs:
			r.done <- g.handle(r)
		case <-tick.C:
			if parentExiting(parent) {
				g.cleanUp()
				return 0
			}
			if n%pruneEvery == 0 {
				g.prune()
			}
		}
	}
}

func (g *guard) handle(r request) error {
	m := r.m
	switch m.Op {
	case "hello":
		return nil
	case "mount":
		table, err := mountTable()
		if err != nil {
			return err
		}
		e, err := topMount(table, m.Dir)
		if err != nil {
			return err
		}
		g.mounts[m.ID] = e
	case "proc":
		fd, err := unix.PidfdOpen(m.PID, 0)
		if err != nil {
			return fmt.Errorf("pidfd of %d: %w", m.PID, err)
		}
		g.procs[m.ID] = proc{pidfd: fd, pid: m.PID}
	case "join":
		g.procs[g.nextID] = proc{pidfd: r.pidfd, pid: r.m.PID}
		g.nextID--
	case "cmd":
		g.cmds[m.ID] = m.Argv
	case "holder":
		fd, err := unix.PidfdOpen(m.PID, 0)
		if err != nil {
			return fmt.Errorf("pidfd of the file holder %d: %w", m.PID, err)
		}
		g.holder = &proc{pidfd: fd, pid: m.PID}
	case "deadline":
		if g.deadline != nil {
			g.deadline.Stop()
		}
		g.deadline = time.NewTimer(time.Until(time.Unix(0, m.At)))
	case "drop":
		delete(g.mounts, m.ID)
		if p, ok := g.procs[m.ID]; ok {
			unix.Close(p.pidfd)
			delete(g.procs, m.ID)
		}
		delete(g.cmds, m.ID)
	default:
		return fmt.Errorf("unknown request %q", m.Op)
	}
	return nil
}

// prune forgets processes that have ended, so a long test binary does not
// pile up pidfds.
func (g *guard) prune() {
	for id, p := range g.procs {
		if ended(p.pidfd) {
			unix.Close(p.pidfd)
			delete(g.procs, id)
		}
	}
}

// ended reports whether the process of pidfd has ended (the pidfd polls
// readable).
func ended(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}
