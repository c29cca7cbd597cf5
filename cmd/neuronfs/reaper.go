package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// reapCmd is the hidden command of the reaper: a small child process that
// lazily unmounts the daemon's mount point when the daemon dies, so even a
// SIGKILLed daemon leaves nothing mounted.
const reapCmd = "__reap"

type reaper struct{ cmd *exec.Cmd }

// startReaper starts the reaper for mnt. The parent-death signal is tied to
// the thread that forks, so that thread is locked and kept alive forever.
func startReaper(mnt string) (*reaper, error) {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	type result struct {
		cmd *exec.Cmd
		err error
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ready.Close()
	ch := make(chan result)
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(self, reapCmd, abs)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
		cmd.Stderr = os.Stderr
		cmd.ExtraFiles = []*os.File{readyW}
		err := cmd.Start()
		readyW.Close()
		ch <- result{cmd, err}
		if err == nil {
			cmd.Wait()
		}
		select {} // keep the locked thread (and with it the death signal) alive
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	// Wait until the reaper handles SIGTERM: a daemon killed before that
	// would otherwise kill the reaper too, by the default action.
	ready.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ready.Read(make([]byte, 1)); err != nil {
		r.cmd.Process.Kill()
		return nil, fmt.Errorf("reaper did not start: %w", err)
	}
	return &reaper{cmd: r.cmd}, nil
}

// stop ends the reaper before an orderly unmount.
func (r *reaper) stop() {
	if r != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
	}
}

func cmdReap(args []string) int {
	if len(args) != 1 {
		return 2
	}
	mnt := args[0]
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if ready := os.NewFile(3, "ready"); ready != nil {
		ready.Write([]byte{1})
		ready.Close()
	}
	// The daemon may already be gone if it died during our start.
	daemon := os.Getppid()
	if daemon == 1 {
		sigs <- syscall.SIGTERM
	}
	// The death signal comes only after the dying daemon has closed its
	// files, and closing a file of its own mount can wait forever for an
	// answer only it could give. So also watch for the daemon's leader
	// becoming a zombie: its serving threads are gone then.
	go func() {
		for !daemonExiting(daemon) {
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case sigs <- syscall.SIGTERM:
		default:
		}
	}()
	<-sigs
	// A daemon killed while it was its own client (go-fuse polls a file
	// of its own mount once at start) leaves a thread waiting for an
	// answer only it could give; detachDeadMount aborts the connection,
	// which ends that wait, and checks first that a neuronfs mount still
	// sits at mnt, so the reaper never detaches something mounted later.
	if _, err := detachDeadMount(mnt, 0); err != nil {
		fmt.Fprintf(os.Stderr, "neuronfs reaper: %v\n", err)
		return 1
	}
	return 0
}

// daemonExiting reports whether process pid is gone, a zombie, or no
// longer this process's parent.
func daemonExiting(pid int) bool {
	if os.Getppid() != pid {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which may itself hold ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}
