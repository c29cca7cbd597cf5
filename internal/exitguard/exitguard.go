// Package exitguard cleans up after a process that dies without cleaning
// up itself: a test binary hit by go test's -timeout panic, a panic, or a
// SIGKILL.
//
// Such a process can even fail to die. Exiting closes its files, and
// closing a file of a FUSE mount it serves itself waits for an answer its
// serving goroutines, already gone, can never give: the process stays in
// D state for good (do_exit → put_files_struct → fuse_flush). Only an
// abort through the FUSE control filesystem ends that wait, and only
// another process can write it.
//
// The guard is that other process: the same executable, re-executed with
// an environment variable that this package's init recognizes, so any
// binary that links the package can start one and no TestMain can run its
// tests in the guard by mistake. It watches its parent; when the parent
// exits (or is gone), the guard aborts the FUSE connections and lazily
// unmounts the mounts registered with it, kills the registered processes,
// runs the registered undo commands (ip netns del ...) and exits.
// Registrations a test undoes itself are released first, so an orderly
// run leaves the guard nothing to do.
//
// What an abort cannot end: a request of the io_uring transport queued on
// a ring entry whose owner is the exiting thread itself. Its delivery is
// task work of that thread, which runs only after the thread has closed
// its files (seen on 6.18: the abort leaves the request in the entry's
// FUSE_REQ state and the process in D state until reboot). Two things
// keep a guarded process out of it: AbortAt aborts before a death
// announced by a deadline (go test's -timeout), and HoldFiles gives the
// process's file table a second owner, so that no exit of the process
// closes its files: the holder does, once the guard has aborted the
// mounts.
package exitguard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// modeEnv holds the guarded parent's pid in a guard process.
	modeEnv = "NEURONFS_EXITGUARD"
	// JoinEnv holds the socket where a child of the guarded process may
	// register itself (Join); Guard.Env sets it for a child's environment.
	JoinEnv = "NEURONFS_EXITGUARD_JOIN"
	// callBudget bounds one exchange with the guard; the guard answers
	// at once, so only a dead or stopped guard takes this long.
	callBudget = 10 * time.Second
)

// In a guard process, run the guard before anything else of the binary
// (its TestMain or main) gets a chance to start.
func init() {
	if pid := os.Getenv(modeEnv); pid != "" {
		os.Exit(serve(pid))
	}
}

// msg is one request to the guard, a JSON line.
type msg struct {
	Op   string   `json:"op"` // hello, mount, proc, cmd, drop, join, deadline, holder
	ID   uint64   `json:"id,omitempty"`
	At   int64    `json:"at,omitempty"` // a deadline, Unix nanoseconds
	Dir  string   `json:"dir,omitempty"`
	PID  int      `json:"pid,omitempty"`
	Argv []string `json:"argv,omitempty"`
}

// reply is the guard's answer to one msg.
type reply struct {
	Err string `json:"err,omitempty"`
}

// Guard is the parent's handle on its guard process. Its methods may be
// called from any goroutine.
type Guard struct {
	cmd   *exec.Cmd
	sock  string
	calls chan call
	ids   atomic.Uint64
	// holder is the pid of the process sharing our file table
	// (HoldFiles), set once at start-up.
	holder int
}

type call struct {
	m    msg
	done chan error
}

// Reg is one registration; Release withdraws it once the test has undone
// what it guards.
type Reg struct {
	g  *Guard
	id uint64
}

// Release withdraws the registration: the guard will not act on it.
func (r Reg) Release() error {
	if r.g == nil {
		return nil
	}
	return r.g.do(msg{Op: "drop", ID: r.id})
}

var shared = sync.OnceValues(Start)

// Shared returns this process's guard, started on first use.
func Shared() (*Guard, error) { return shared() }

// Start starts a guard for this process. The guard outlives the process
// by design; keep the Guard for as long as the process runs.
func Start() (*Guard, error) {
	sockDir, err := os.MkdirTemp("", "neuronfs-guard-")
	if err != nil {
		return nil, fmt.Errorf("exit guard: %w", err)
	}
	sock := filepath.Join(sockDir, "join")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("exit guard: %w", err)
	}
	// Children that run as another user join too; the guard takes only
	// its parent's children, whoever connects.
	os.Chmod(sockDir, 0o711)
	os.Chmod(sock, 0o666)
	// The guard owns the socket from now on, and removes it.
	ln.SetUnlinkOnClose(false)
	lnFile, err := ln.File()
	ln.Close()
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("exit guard: %w", err)
	}
	defer lnFile.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"neuronfs-exitguard"}
	// A race-detector build sleeps a second before exiting by default;
	// the guard has no races to report by then.
	cmd.Env = append(cleanEnv(), modeEnv+"="+strconv.Itoa(os.Getpid()),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	// Not in the parent's directory, which may be a mount it must not
	// keep busy; in a process group of its own, so that a terminal's
	// ^C, which ends the parent, leaves the guard to clean up.
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{lnFile}
	in, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("exit guard: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("exit guard: %w", err)
	}
	cmd.Stdout = outW
	err = cmd.Start()
	outW.Close()
	if err != nil {
		outR.Close()
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("exit guard: start: %w", err)
	}
	go cmd.Wait() // the guard normally outlives us; reap it if not
	g := &Guard{cmd: cmd, sock: sock, calls: make(chan call)}
	go g.exchange(in, outR)
	if err := g.do(msg{Op: "hello"}); err != nil {
		cmd.Process.Kill()
		return nil, err
	}
	return g, nil
}

// exchange is the only user of the pipes to the guard: one request, one
// answer, in turn.
func (g *Guard) exchange(in interface{ Write([]byte) (int, error) }, out *os.File) {
	enc := json.NewEncoder(in)
	r := bufio.NewReader(out)
	// After a failed exchange the answers may be out of step with the
	// requests: every later call fails too.
	var broken error
	for c := range g.calls {
		if broken != nil {
			c.done <- fmt.Errorf("exit guard: %s: %w", c.m.Op, broken)
			continue
		}
		if err := enc.Encode(c.m); err != nil {
			broken = err
			c.done <- fmt.Errorf("exit guard: %s: %w", c.m.Op, err)
			continue
		}
		out.SetReadDeadline(time.Now().Add(callBudget))
		line, err := r.ReadBytes('\n')
		if err != nil {
			broken = fmt.Errorf("no answer: %w", err)
			c.done <- fmt.Errorf("exit guard: %s: %w", c.m.Op, broken)
			continue
		}
		var rep reply
		if err := json.Unmarshal(line, &rep); err != nil {
			c.done <- fmt.Errorf("exit guard: %s: answer %q: %w", c.m.Op, line, err)
		} else if rep.Err != "" {
			c.done <- fmt.Errorf("exit guard: %s: %s", c.m.Op, rep.Err)
		} else {
			c.done <- nil
		}
	}
}

func (g *Guard) do(m msg) error {
	c := call{m: m, done: make(chan error, 1)}
	g.calls <- c
	return <-c.done
}

func (g *Guard) register(m msg) (Reg, error) {
	m.ID = g.ids.Add(1)
	if err := g.do(m); err != nil {
		return Reg{}, err
	}
	return Reg{g: g, id: m.ID}, nil
}

// Mount registers what is mounted at dir now (the guard reads its mount
// ID and device number from its mount table at once). If the parent dies
// with it registered, the guard aborts its FUSE connection, if it is one,
// and detaches it — only if that very mount still sits at dir.
func (g *Guard) Mount(dir string) (Reg, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Reg{}, fmt.Errorf("exit guard: %w", err)
	}
	return g.register(msg{Op: "mount", Dir: abs})
}

// Process registers a child process, by pid, for SIGKILL. Call it after
// starting the child and before waiting for it: the guard holds a pidfd
// of the process from the registration on, and an unreaped child's pid
// cannot name another process.
func (g *Guard) Process(pid int) (Reg, error) {
	return g.register(msg{Op: "proc", PID: pid})
}

// Command registers an undo command. The guard runs the commands left
// registered, newest first, after the processes are gone.
func (g *Guard) Command(argv ...string) (Reg, error) {
	if len(argv) == 0 {
		return Reg{}, errors.New("exit guard: empty command")
	}
	return g.register(msg{Op: "cmd", Argv: argv})
}

// Pid is the guard process's pid.
func (g *Guard) Pid() int { return g.cmd.Process.Pid }

// AbortAt has the guard abort the FUSE connections of the registered
// mounts at t, while the parent still runs: for a test binary, just
// before go test's -timeout panic. An abort after the parent's end may
// come too late (see the package comment); this one cannot.
func (g *Guard) AbortAt(t time.Time) error {
	return g.do(msg{Op: "deadline", At: t.UnixNano()})
}

// Env is the environment entry that lets a child started with it
// register itself (Join).
func (g *Guard) Env() string { return JoinEnv + "=" + g.sock }

// Export puts Env in this process's environment, for every child it
// starts from now on.
func (g *Guard) Export() error { return os.Setenv(JoinEnv, g.sock) }

// cleanEnv is this process's environment without the guard's entries:
// the guard and what it runs are nobody's child to join.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != modeEnv && k != JoinEnv && k != "GORACE" {
			env = append(env, kv)
		}
	}
	return env
}
