package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
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
	ch := make(chan result)
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(self, reapCmd, abs)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
		cmd.Stderr = os.Stderr
		err := cmd.Start()
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
	// The daemon may already be gone if it died during our start.
	if os.Getppid() == 1 {
		sigs <- syscall.SIGTERM
	}
	<-sigs
	if isNeuronfsMount(mnt) {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			fmt.Fprintf(os.Stderr, "neuronfs reaper: unmount %s: %v\n", mnt, err)
			return 1
		}
	}
	return 0
}

// isNeuronfsMount reports whether a neuronfs FUSE mount sits at mnt, so
// the reaper never detaches something else mounted there later.
func isNeuronfsMount(mnt string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+2 < len(fields) && len(fields) > 4 {
				if fields[4] == mnt && strings.HasPrefix(fields[i+1], "fuse") && fields[i+2] == "neuronfs" {
					return true
				}
			}
		}
	}
	return false
}
