package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/chardev"
	"github.com/neuronfs/neuronfs/internal/procfs"
	"github.com/neuronfs/neuronfs/ioctl"
)

// stalledOpens is how many opens fusestall makes stall at once: well
// past chardev.MaxResolvingLoops.
const stalledOpens = 4 * chardev.MaxResolvingLoops

// stallHoldEnv: fusestall holds its lookups for twice
// chardev.ResolveBound once they all arrived.
const stallHoldEnv = "NEURONFS_STALL_HOLD"

func init() {
	// fusestall serves a FUSE file system whose lookups wait until told,
	// opens stalledOpens different names in it at once, each from a
	// thread of its own, and once every lookup arrived prints how many
	// threads its parent (the daemon) gained. Meanwhile an ordinary open
	// must still be served. Then it lets the lookups answer and prints
	// "ok" once every open returned.
	clients["fusestall"] = func() int {
		daemon := os.Getppid()
		before, err := threadsOf(daemon)
		if err != nil {
			return clientFail("%v", err)
		}
		dir, err := os.MkdirTemp("", "fusestall-")
		if err != nil {
			return clientFail("%v", err)
		}
		defer os.Remove(dir)
		root := &stallingDir{release: make(chan struct{})}
		server, err := gofs.Mount(dir, root, &gofs.Options{MountOptions: fuse.MountOptions{DirectMount: true, MaxBackground: 2 * stalledOpens}})
		if err != nil {
			return clientFail("mount: %v", err)
		}
		defer server.Unmount()
		var wg sync.WaitGroup
		for i := range stalledOpens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				goruntime.LockOSThread()
				defer goruntime.UnlockOSThread()
				if f, err := os.Open(filepath.Join(dir, "file"+strconv.Itoa(i))); err == nil {
					f.Close()
				}
			}()
		}
		released := false
		release := func() {
			if !released {
				released = true
				close(root.release)
			}
		}
		defer release()
		for deadline := time.Now().Add(30 * time.Second); root.lookups.Load() < stalledOpens; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return clientFail("%d of %d lookups arrived in 30 s", root.lookups.Load(), stalledOpens)
			}
		}
		after, err := threadsOf(daemon)
		if err != nil {
			return clientFail("%v", err)
		}
		served := make(chan error, 1)
		go func() {
			f, err := os.Open("/proc/self/status")
			if err == nil {
				f.Close()
			}
			served <- err
		}()
		select {
		case err := <-served:
			if err != nil {
				return clientFail("an ordinary open while opens stall: %v", err)
			}
		case <-time.After(30 * time.Second):
			return clientFail("an ordinary open was not served in 30 s while opens stall")
		}
		if os.Getenv(stallHoldEnv) == "1" {
			// Past the bound, the stalled opens are the kernel's.
			time.Sleep(2 * chardev.ResolveBound)
		}
		release()
		wg.Wait()
		// Once nothing stalls, a device open is the supervisor's again.
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return clientFail("open of the device after the stall: %v", err)
		}
		defer unix.Close(fd)
		var bi ioctl.DeviceBasicInfo
		if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 || bi.Architecture == 0 {
			return clientFail("DEVICE_BASIC_INFO after the stall: %d %v %+v", r, e, bi)
		}
		fmt.Printf("ok %d\n", after-before)
		return 0
	}
}

// threadsOf reads process pid's thread count.
func threadsOf(pid int) (int, error) {
	v, err := procfs.Field(fmt.Sprintf("/proc/%d/status", pid), "Threads")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// stallingDir is a directory whose lookups wait for release, then find
// nothing.
type stallingDir struct {
	gofs.Inode
	release chan struct{}
	lookups atomic.Int32
}

func (n *stallingDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if strings.HasPrefix(name, "file") {
		n.lookups.Add(1)
		<-n.release
	}
	return nil, syscall.ENOENT
}

// Opens whose paths stall resolving cost the supervisor a bounded number
// of threads (issue 39, finding 6), and the supervisor keeps serving
// other calls meanwhile.
func TestRunSupervisorStalledOpensBounded(t *testing.T) {
	testutilRequireFUSE(t)
	bin := clientCopy(t)
	// As root: the client mounts a FUSE file system.
	out, err := neuronfs(t, "run", "--instance=trn1.2xlarge", "--uid=0", "--gid=0", "--", bin, "__client", "fusestall").Output()
	got := strings.TrimSpace(string(out))
	grew, convErr := strconv.Atoi(strings.TrimPrefix(got, "ok "))
	if err != nil || convErr != nil {
		t.Fatalf("run fusestall: %v, printed %q", err, got)
	}
	// The stalled loops, the one that resolves nothing, and what the Go
	// runtime may add for its own blocked calls.
	if limit := chardev.MaxResolvingLoops + 1 + 4; grew > limit {
		t.Errorf("the daemon gained %d threads with %d opens stalled, want at most %d", grew, stalledOpens, limit)
	}
}

// An open whose path is still resolving after chardev.ResolveBound is
// answered CONTINUE, and the daemon says so: its caller no longer waits
// on the supervisor.
func TestRunSupervisorStalledOpenContinues(t *testing.T) {
	testutilRequireFUSE(t)
	bin := clientCopy(t)
	// The daemon says so in its log, never on CMD's streams.
	logFile := filepath.Join(t.TempDir(), "daemon.log")
	cmd := neuronfs(t, "run", "--instance=trn1.2xlarge", "--uid=0", "--gid=0", "--log-file="+logFile, "--", bin, "__client", "fusestall")
	cmd.Env = append(cmd.Env, stallHoldEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if got := string(out); err != nil || !strings.HasPrefix(got, "ok ") {
		t.Fatalf("run fusestall: %v, printed %q\n%s", err, got, stderr.String())
	}
	logged, _ := os.ReadFile(logFile)
	if n := strings.Count(string(logged), "the kernel opens it itself"); n != chardev.MaxResolvingLoops {
		t.Errorf("%d opens answered at the bound, want the %d stalled resolving:\n%s", n, chardev.MaxResolvingLoops, logged)
	}
}
