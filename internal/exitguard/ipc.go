package exitguard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

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
