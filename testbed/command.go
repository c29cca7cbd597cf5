package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/chardev"
)

// launchPrefix starts argv[0] of a command's launcher: the test binary
// re-executed, which this package's init recognises (launch.go). The
// rest is the testbed's socket, a newline, and the command's name.
const launchPrefix = "neuronfs-testbed-launch:"

// launchConfig is what the testbed tells a launcher over the socket.
type launchConfig struct {
	Root   string          `json:"root"`
	Layout hostview.Layout `json:"layout"`
	Direct bool            `json:"direct"` // device descriptors are memory files
	// Rootless: a copy of the mount follows the configuration, to attach
	// at Root (usermount.go).
	Rootless bool `json:"rootless"`
	// View: the filter view; the launcher only installs its filter.
	View bool `json:"view"`
}

// Command returns a command that runs name with args inside the host, as
// under `neuronfs run`: /dev/neuronN are character devices whose opens the
// testbed serves, the driver's sysfs, PCI functions, /proc/devices and
// DMI are in place, and $NEURONFS_CONTROL names the control directory.
// name is looked up in PATH inside the host, when the command starts.
//
// Set Stdin, Stdout, Stderr, Dir, Env (it is the test process's
// environment by default; NEURONFS_CONTROL is added in any case) and
// append to Args as with any exec.Cmd; leave Path, Args[0] and
// SysProcAttr alone: they start the launcher. The command runs as the test
// process's user. A command still running when the test ends is killed.
func (tb *Testbed) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(tb.self)
	cmd.Args = append([]string{launchPrefix + tb.sock + "\n" + name}, args...)
	// A private mount namespace (Go makes its mounts private), and no
	// command outliving the test process's thread that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if tb.um != nil {
		cmd.SysProcAttr = asCaller()
	}
	if tb.shadow != nil {
		cmd.SysProcAttr = filterCommand()
	}
	return cmd
}

// accept serves the launchers of this testbed's commands until the
// listener closes.
func (tb *Testbed) accept() {
	cfg, err := json.Marshal(launchConfig{Root: tb.dir, Layout: tb.layout, Direct: tb.direct != nil, Rootless: tb.um != nil, View: tb.shadow != nil})
	if err != nil {
		tb.log.WithError(err).Error("launch configuration")
		return
	}
	for {
		conn, err := tb.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				tb.log.WithError(err).Error("accepting a command's launcher")
			}
			return
		}
		tb.mu.Lock()
		if tb.closed {
			tb.mu.Unlock()
			conn.Close()
			return
		}
		tb.served.Add(1)
		tb.mu.Unlock()
		go func() {
			defer tb.served.Done()
			defer conn.Close()
			tb.serve(conn, cfg)
		}()
	}
}

// serve hands one launcher the host, takes its seccomp listener and
// answers the command's opens of the nodes until it and its children
// are gone.
func (tb *Testbed) serve(conn *net.UnixConn, cfg []byte) {
	pid, err := peerPID(conn)
	if err != nil {
		tb.log.WithError(err).Error("a command's launcher")
		return
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	tb.mu.Lock()
	tb.children[pid] = pidfd
	tb.mu.Unlock()
	defer func() {
		tb.mu.Lock()
		delete(tb.children, pid)
		tb.mu.Unlock()
		unix.Close(pidfd)
	}()
	reg, err := tb.guard.Process(pid)
	if err != nil {
		tb.log.WithError(err).Warn("the exit guard does not watch a command")
	}
	defer reg.Release()
	if _, err := conn.Write(cfg); err != nil {
		return
	}
	if tb.um != nil && tb.sendClone(conn) != nil {
		return
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return
	}
	listener := -1
	raw.Read(func(fd uintptr) bool {
		listener, err = hostview.ReceiveFD(int(fd))
		return !errors.Is(err, unix.EAGAIN)
	})
	if err != nil || listener < 0 {
		return // the launcher failed before handing it over, and said why
	}
	if err := chardev.Serve(tb.supervisorConfig(listener, pid)); err != nil {
		tb.log.WithError(err).Error("seccomp supervisor stopped")
	}
}

// supervisorConfig is the supervisor's configuration for the listener of
// the command pid.
func (tb *Testbed) supervisorConfig(listener, pid int) chardev.Config {
	var nodes []string
	for _, name := range tb.layout.Devices {
		nodes = append(nodes, "/dev/"+name)
	}
	if tb.shadow != nil {
		return tb.filterConfig(listener, nodes)
	}
	var files []string
	for i := range tb.layout.Devices {
		files = append(files, tb.fsys.DevicePath(i))
	}
	sc := chardev.Config{
		Listener: listener,
		Major:    tb.layout.Major,
		Nodes:    nodes,
		Files:    files,
		Open:     tb.fsys.OpenFor,
		Mmap:     tb.fsys.CheckMmap,
		Log:      tb.log,
	}
	if tb.um != nil {
		sc.View = fmt.Sprintf("/proc/%d/root", pid) // where its stand-ins are
	}
	if tb.direct != nil {
		sc.Files, sc.Open, sc.Direct = tb.direct.Paths(), tb.direct.Open, tb.direct
	}
	return sc
}

// peerPID is the pid of the process at the other end of conn.
func peerPID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	return int(cred.Pid), nil
}

// splitLaunch reads a launcher's argv[0]: the socket and the name.
func splitLaunch(arg0 string) (sock, name string, ok bool) {
	rest, ok := strings.CutPrefix(arg0, launchPrefix)
	if !ok {
		return "", "", false
	}
	sock, name, ok = strings.Cut(rest, "\n")
	return sock, name, ok
}
