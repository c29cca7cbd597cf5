package spacefs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// childEnv, set to the backing directory, makes the binary the store
// server instead of whatever it is (init below), the way a test binary
// or the daemon starts it.
const childEnv = "NEURONFS_SPACEFS_DIR"

// The descriptors the child is handed: the read end of its lifeline and
// the pipe on which it says it is ready (or why not).
const (
	lifelineFd = 3
	readyFd    = 4
)

func init() {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(serve(dir))
	}
}

// Server is the daemon's handle on a running store server.
type Server struct {
	cmd      *exec.Cmd
	lifeline *os.File // closing it ends the server
	rootFd   int      // the server's directory, reached through /proc
	dir      string
}

// startTimeout bounds the server's start-up: a mount and a directory.
const startTimeout = 30 * time.Second

// Start runs a store server over dir, which must exist. Its mount lives
// only in its own mount namespace.
func Start(dir string) (*Server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("space store: %w", err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("space store: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("space store: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.ExtraFiles = []*os.File{lifeR, readyW}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	err = cmd.Start()
	lifeR.Close()
	readyW.Close()
	if err != nil {
		lifeW.Close()
		readyR.Close()
		return nil, fmt.Errorf("space store: start %s: %w", self, err)
	}
	s := &Server{cmd: cmd, lifeline: lifeW, rootFd: -1, dir: dir}
	readyR.SetReadDeadline(time.Now().Add(startTimeout))
	line, rerr := bufio.NewReader(readyR).ReadString('\n')
	readyR.Close()
	if line = strings.TrimSpace(line); line != "ok" {
		s.Close()
		if line == "" && rerr != nil {
			line = rerr.Error()
		}
		return nil, fmt.Errorf("space store over %s: %s", dir, line)
	}
	// The mount is in the child's namespace; its root directory reaches
	// into it.
	s.rootFd, err = unix.Open(fmt.Sprintf("/proc/%d/root%s", cmd.Process.Pid, dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("space store over %s: open its directory: %w", dir, err)
	}
	return s, nil
}

// Create opens the physical space named name, span bytes long: a fresh
// file, all zeros, whose offsets are physical addresses.
func (s *Server) Create(name string, span uint64) (int, error) {
	fd, err := unix.Openat(s.rootFd, fileName(name, span), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("physical memory of %s in the store over %s: %w", name, s.dir, err)
	}
	return fd, nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Close ends the server and waits for it. Files still open on it read
// what is cached and fail elsewhere, so close the chips first.
func (s *Server) Close() {
	if s.rootFd >= 0 {
		unix.Close(s.rootFd)
		s.rootFd = -1
	}
	s.lifeline.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(startTimeout):
		s.cmd.Process.Kill()
		<-done
	}
}

// serve is the child: it mounts the store's filesystem over dir in its
// own mount namespace and serves it until the daemon is gone.
func serve(dir string) int {
	ready := os.NewFile(readyFd, "ready")
	fail := func(err error) int {
		fmt.Fprintf(ready, "%v\n", err)
		return 1
	}
	dirFd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("open %s: %w", dir, err))
	}
	// What this namespace mounts stays in it.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("private mounts: %w", err))
	}
	r := &root{dirFd: dirFd, spaces: make(map[string]*space)}
	forever := time.Duration(1 << 62)
	opts := &gofs.Options{
		EntryTimeout: &forever,
		AttrTimeout:  new(time.Duration), // blocks change
		MountOptions: fuse.MountOptions{
			FsName:            "neuronfs-space",
			Name:              "neuronfs",
			DirectMount:       true,
			DirectMountStrict: true,
			// The page cache is the memory: nothing may drop it but a
			// punch, and the kernel never passes these files through.
			DisabledCapabilities:     fuse.CAP_PASSTHROUGH | fuse.CAP_AUTO_INVAL_DATA,
			ExplicitDataCacheControl: true,
			MaxWrite:                 1 << 20,
		},
	}
	srv, err := gofs.Mount(dir, r, opts)
	if err != nil {
		return fail(fmt.Errorf("mount: %w", err))
	}
	liftDirtyLimit(dir)
	fmt.Fprintln(ready, "ok")
	ready.Close()
	go func() {
		io.Copy(io.Discard, os.NewFile(lifelineFd, "lifeline"))
		// The daemon is gone: exiting closes /dev/fuse, which aborts the
		// connection, and the namespace takes the mount with it.
		os.Exit(0)
	}()
	srv.Wait()
	return 0
}

// liftDirtyLimit lets the space's dirty pages use the host's whole dirty
// budget, as a memfd's do; by default a FUSE filesystem gets a strict 1%
// of it, which throttles every writer of device memory to the speed of
// this server. Only root of the host may; elsewhere writes stay slower.
func liftDirtyLimit(dir string) {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return
	}
	bdi := bdiDir(st.Dev)
	os.WriteFile(filepath.Join(bdi, "strict_limit"), []byte("0"), 0)
	os.WriteFile(filepath.Join(bdi, "max_ratio"), []byte("100"), 0)
}

// bdiDir is the sysfs directory of the writeback settings of the
// filesystem on device dev.
func bdiDir(dev uint64) string {
	return filepath.Join("/sys/class/bdi", fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)))
}
