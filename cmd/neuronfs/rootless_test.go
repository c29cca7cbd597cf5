package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/testenv"
)

// Environment of the rootless test's helpers.
const (
	nobodyArgsEnv = "NEURONFS_NOBODY_ARGS" // tab-separated command asnobody runs
	fuseCopyEnv   = "NEURONFS_FUSE_COPY"   // empty directory for asnobody's /dev/fuse
	rootlessDir   = "NEURONFS_ROOTLESS_DIR"
)

const nobody = 65534

func init() {
	// asnobody makes /dev/fuse usable by nobody in its own mount namespace
	// (the test starts it in a private one; the host's node is never
	// changed): a 0666 copy of the node on a tmpfs of its own, bound over
	// /dev/fuse. Then it becomes nobody and execs $NEURONFS_NOBODY_ARGS.
	clients["asnobody"] = func() int {
		dir := os.Getenv(fuseCopyEnv)
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=755"); err != nil {
			return clientFail("tmpfs on %s: %v", dir, err)
		}
		node := filepath.Join(dir, "fuse")
		if err := unix.Mknod(node, unix.S_IFCHR|0o666, int(unix.Mkdev(10, 229))); err != nil {
			return clientFail("%v", err)
		}
		if err := unix.Chmod(node, 0o666); err != nil {
			return clientFail("%v", err)
		}
		if err := unix.Mount(node, fuseDevice, "", unix.MS_BIND, ""); err != nil {
			return clientFail("bind over %s: %v", fuseDevice, err)
		}
		if err := syscall.Setgroups(nil); err != nil {
			return clientFail("%v", err)
		}
		if err := syscall.Setresgid(nobody, nobody, nobody); err != nil {
			return clientFail("%v", err)
		}
		if err := syscall.Setresuid(nobody, nobody, nobody); err != nil {
			return clientFail("%v", err)
		}
		args := strings.Split(os.Getenv(nobodyArgsEnv), "\t")
		return clientFail("exec: %v", syscall.Exec(args[0], args, os.Environ()))
	}
	// rootless checks, under a run without root, the devices (directfds),
	// then prints the ids it has and creates $NEURONFS_ROOTLESS_DIR/made
	// for the test to see its owner on the host.
	clients["rootless"] = func() int {
		if status := clients["directfds"](); status != 0 {
			return status
		}
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return clientFail("%v", err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") {
				fmt.Println(f[0], f[1], f[2])
			}
		}
		if err := os.WriteFile(filepath.Join(os.Getenv(rootlessDir), "made"), nil, 0o644); err != nil {
			return clientFail("%v", err)
		}
		return 0
	}
	// rootlesswait prints its parent (the daemon) and waits for the end
	// of its standard input.
	clients["rootlesswait"] = func() int {
		fmt.Println("daemon", os.Getppid())
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
}

// asNobody returns the command that runs neuronfs with args as nobody in
// a private mount namespace where /dev/fuse is usable by nobody.
func asNobody(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	testRequireRoot(t)
	testenv.RequireFUSE(t)
	// Unprivileged user namespaces are what is under test: their absence
	// is a missing facility.
	if f := readUsernsFacts(); f.beforeClone() != nil {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("NEURONFS_REQUIRE_FUSE=1 but %v", f.beforeClone())
		}
		t.Skip(f.beforeClone())
	}
	cmd := exec.Command(bin, "__client", "asnobody")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1", fuseCopyEnv+"="+t.TempDir(),
		nobodyArgsEnv+"="+strings.Join(append([]string{bin}, args...), "\t"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	cmd.Stderr = os.Stderr
	return cmd
}

// A run without root, as nobody: the devices answer and map coherently
// through the supervisor's descriptors, CMD sees the ids it asked for
// (by default nobody's) and what it creates on the host is nobody's, and
// nothing of the run is seen on the host.
func TestRunRootless(t *testing.T) {
	bin := binaryCopy(t, "neuronfs")
	before := hostView(t)
	for _, c := range []struct {
		name   string
		flags  []string
		inside string // the uid and gid CMD sees
	}{
		{"caller", nil, "65534"},
		{"uid0", []string{"--uid=0", "--gid=0"}, "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "neuronfs-rootless-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			os.Chmod(dir, 0o777)
			args := append(append([]string{"run"}, c.flags...), "--", bin, "__client", "rootless")
			cmd := asNobody(t, bin, args...)
			cmd.Env = append(cmd.Env, rootlessDir+"="+dir)
			out, err := cmd.Output()
			want := fmt.Sprintf("ok memory-file\nUid: %s %s\nGid: %s %s\n", c.inside, c.inside, c.inside, c.inside)
			if err != nil || string(out) != want {
				t.Fatalf("%v: %q, want %q", err, out, want)
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, "made"), &st); err != nil {
				t.Fatal(err)
			}
			if st.Uid != nobody || st.Gid != nobody {
				t.Errorf("a file CMD created is %d:%d on the host, want nobody's %d:%d", st.Uid, st.Gid, nobody, nobody)
			}
		})
	}
	if after := hostView(t); after != before {
		t.Errorf("the host changed:\n%s\nafter run, was\n%s", after, before)
	}
}

// A rootless run killed with SIGKILL takes its daemon with it, and its
// mounts were never in the namespace it was started from.
func TestRunRootlessKilled(t *testing.T) {
	bin := binaryCopy(t, "neuronfs")
	cmd := asNobody(t, bin, "run", "--", bin, "__client", "rootlesswait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	daemon, convErr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "daemon "))
	if err != nil || convErr != nil {
		t.Fatalf("CMD said %q (%v)", line, err)
	}
	// A pidfd pins the daemon's identity for the check below.
	pidfd, err := unix.PidfdOpen(daemon, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	// The run's own namespace (asnobody's) has none of the mounts of the
	// view; the daemon's has them all.
	for _, p := range []string{"/proc/devices", "/sys/class", "/sys/module", "/sys/dev/char", "/sys/devices/virtual"} {
		if mountPoints(t, cmd.Process.Pid)[p] || !mountPoints(t, daemon)[p] {
			t.Errorf("%s: mounted in the namespace run started in %v, in the daemon's %v", p, mountPoints(t, cmd.Process.Pid)[p], mountPoints(t, daemon)[p])
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := unix.Poll(fds, 100)
		if n == 1 {
			break
		}
		if (err != nil && err != unix.EINTR) || time.Now().After(deadline) {
			t.Fatalf("the daemon (pid %d) outlived the killed run (%v)", daemon, err)
		}
	}
}

// mountPoints lists the mount points of process pid's mount namespace.
func mountPoints(t *testing.T, pid int) map[string]bool {
	t.Helper()
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	points := map[string]bool{}
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			points[f[4]] = true
		}
	}
	return points
}
