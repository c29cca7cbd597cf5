package exitguard

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/fusectl"
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

// readParent passes the parent's requests to the loop and its answers
// back. At EOF the parent is exiting, or done with the guard; the loop
// finds out which.
func readParent(reqs chan<- request) {
	in := bufio.NewReader(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m msg
		var rep reply
		if err := json.Unmarshal(line, &m); err != nil {
			rep.Err = fmt.Sprintf("bad request %q: %v", line, err)
		} else {
			done := make(chan error, 1)
			reqs <- request{m: m, pidfd: -1, done: done}
			if err := <-done; err != nil {
				rep.Err = err.Error()
			}
		}
		if enc.Encode(rep) != nil {
			return
		}
	}
}

// acceptJoins registers the parent's children that ask to be.
func acceptJoins(ln net.Listener, parent int, reqs chan<- request) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go join(conn.(*net.UnixConn), parent, reqs)
	}
}

func join(conn *net.UnixConn, parent int, reqs chan<- request) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(callBudget))
	var rep reply
	pid, pidfd, err := joiner(conn, parent)
	if err != nil {
		rep.Err = err.Error()
	} else {
		done := make(chan error, 1)
		reqs <- request{m: msg{Op: "join", PID: pid}, pidfd: pidfd, done: done}
		if err := <-done; err != nil {
			rep.Err = err.Error()
		}
	}
	json.NewEncoder(conn).Encode(rep)
}

// joiner reads a join request and returns a pidfd of the process that
// sent it, if it is a child of parent. The process waits for the answer,
// so its pid cannot be reused until the pidfd holds it.
func joiner(conn *net.UnixConn, parent int) (pid, pidfd int, err error) {
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return 0, -1, err
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil || m.Op != "join" {
		return 0, -1, fmt.Errorf("bad join request %q", line)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, -1, err
	}
	var cred *unix.Ucred
	var credErr error
	raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if credErr != nil {
		return 0, -1, fmt.Errorf("peer credentials: %w", credErr)
	}
	pid = int(cred.Pid)
	pidfd, err = unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, -1, fmt.Errorf("pidfd of %d: %w", cred.Pid, err)
	}
	if ppid, err := parentOf(int(cred.Pid)); err != nil || ppid != parent {
		unix.Close(pidfd)
		return 0, -1, fmt.Errorf("process %d is not a child of %d", cred.Pid, parent)
	}
	return pid, pidfd, nil
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

// cleanUp undoes what is left registered. The order matters: aborting
// the connections first releases a parent stuck closing a file of its
// own mount; the processes must be gone before their network namespaces
// and loop devices can go.
func (g *guard) cleanUp() {
	g.prune()
	if len(g.mounts)+len(g.procs)+len(g.cmds) == 0 {
		return
	}
	log := g.log.WithFields(logrus.Fields{"parent": g.parent, "mounts": len(g.mounts), "processes": len(g.procs), "commands": len(g.cmds)})
	log.Warn("parent exited without undoing everything; cleaning up")
	live := g.abortMounts(log, "")
	for _, p := range g.procs {
		p.kill()
	}
	// Newest first: a mount made on top of another goes before it.
	slices.SortFunc(live, func(a, b mountEntry) int { return cmp.Compare(b.id, a.id) })
	for _, e := range live {
		if err := unix.Unmount(e.dir, unix.MNT_DETACH); err != nil {
			log.WithError(err).WithField("dir", e.dir).Warn("unmount")
		}
	}
	deadline := time.Now().Add(killBudget)
	for _, p := range g.procs {
		for !ended(p.pidfd) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		unix.Close(p.pidfd)
	}
	ids := make([]uint64, 0, len(g.cmds))
	for id := range g.cmds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	for _, id := range ids {
		runUndo(log, g.cmds[id])
	}
}

// abortMounts aborts the connections of the registered FUSE mounts that
// are still in place, and returns every registered mount in place. A
// non-empty why is logged when there is something to abort.
func (g *guard) abortMounts(log *logrus.Entry, why string) []mountEntry {
	table, err := mountTable()
	if err != nil {
		log.WithError(err).Error("mount table")
	}
	var live []mountEntry
	for _, e := range g.mounts {
		if has(table, e) {
			live = append(live, e)
		}
	}
	for _, e := range live {
		if !e.fuse() {
			continue
		}
		if why != "" {
			log.WithField("dir", e.dir).Warnf("%s: aborting the FUSE connection", why)
		}
		if err := fusectl.Abort(fusectl.Conn(e.major, e.minor)); err != nil {
			log.WithError(err).WithField("dir", e.dir).Warn("abort")
		}
	}
	return live
}

func runUndo(log *logrus.Entry, argv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = cleanEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		log.WithError(err).WithField("command", argv).Warnf("undo: %s", out)
	}
}
