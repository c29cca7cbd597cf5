package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// Environment of the rootless test's helpers.
const (
	nobodyArgsEnv = "NEURONFS_NOBODY_ARGS" // tab-separated command asnobody runs
	fuseCopyEnv   = "NEURONFS_FUSE_COPY"   // empty directory for asnobody's /dev/fuse
	rootlessDir   = "NEURONFS_ROOTLESS_DIR"
	fuseModeEnv   = "NEURONFS_FUSE_MODE"  // the copy's mode, octal (default 666)
	noUsernsEnv   = "NEURONFS_NO_USERNS"  // 1: refuse new user namespaces
	usernsMaxEnv  = "NEURONFS_USERNS_MAX" // asnobody's user.max_user_namespaces
)

const nobody = 65534

func init() {
	// asnobody makes /dev/fuse usable by nobody in its own mount namespace
	// (the test starts it in a private one; the host's node is never
	// changed): a 0666 copy of the node on a tmpfs of its own, bound over
	// /dev/fuse. Then it becomes nobody and execs $NEURONFS_NOBODY_ARGS.
	// To make what a rootless run needs missing, the copy may have another
	// mode, new user namespaces may be refused as a container's seccomp
	// profile does, and (started in a user namespace of its own, where
	// it sets the limit) user.max_user_namespaces may be lowered.
	clients["asnobody"] = func() int {
		goruntime.LockOSThread() // the thread that sets no_new_privs execs
		if max := os.Getenv(usernsMaxEnv); max != "" {
			// This user namespace's own limit: the host's is untouched.
			if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte(max), 0); err != nil {
				return clientFail("%v", err)
			}
		} else if err := fuseCopy(os.Getenv(fuseCopyEnv), os.Getenv(fuseModeEnv)); err != nil {
			return clientFail("%v", err)
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
		if os.Getenv(noUsernsEnv) == "1" {
			if err := testenv.RefuseUserns(); err != nil {
				return clientFail("%v", err)
			}
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
	// rootlesswait prints the daemon (its keeper's parent) and waits for
	// the end of its standard input.
	clients["rootlesswait"] = func() int {
		daemon, ok := parentOf(os.Getppid())
		if !ok {
			return clientFail("no keeper's parent")
		}
		fmt.Println("daemon", daemon)
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
}

// fuseCopy binds a copy of the FUSE device with mode (octal, default
// 666) over /dev/fuse, on a tmpfs mounted at dir.
func fuseCopy(dir, mode string) error {
	m, err := strconv.ParseUint(mode, 8, 32)
	if mode == "" {
		m, err = 0o666, nil
	}
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", dir, err)
	}
	node := filepath.Join(dir, "fuse")
	if err := unix.Mknod(node, unix.S_IFCHR|uint32(m), int(unix.Mkdev(10, 229))); err != nil {
		return err
	}
	if err := unix.Chmod(node, uint32(m)); err != nil {
		return err
	}
	if err := unix.Mount(node, fuseDevice, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind over %s: %w", fuseDevice, err)
	}
	return nil
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
	// The suite's file-backed pass keeps its backing under a directory
	// only root may enter: nobody's daemons take memfds.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, device.BackingEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "NEURONFS_AS_MAIN=1", fuseCopyEnv+"="+t.TempDir(),
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
		// Device memory in the compact store: its server mounts inside
		// the daemon's user namespace.
		{"store", []string{"--memory-backing=store:"}, "65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "neuronfs-rootless-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			os.Chmod(dir, 0o777)
			flags := slices.Clone(c.flags)
			for i, f := range flags {
				if strings.HasSuffix(f, "store:") {
					flags[i] = f + dir
				}
			}
			args := append(append([]string{"run"}, flags...), "--", bin, "__client", "rootless")
			cmd := asNobody(t, bin, args...)
			cmd.Env = append(cmd.Env, rootlessDir+"="+dir)
			out, err := cmd.Output()
			// directfds's line goes on with what it counted (signals).
			want := fmt.Sprintf("Uid: %s %s\nGid: %s %s\n", c.inside, c.inside, c.inside, c.inside)
			first, rest, _ := strings.Cut(string(out), "\n")
			if err != nil || !strings.HasPrefix(first+" ", "ok memory-file ") || rest != want {
				t.Fatalf("%v: %q, want \"ok memory-file ...\\n%s\"", err, out, want)
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

// What a run without root lacks is named in one line, status 1: each
// condition made for real for nobody, without touching the host.
func TestRunRootlessMissingPieces(t *testing.T) {
	bin := binaryCopy(t, "neuronfs")
	for _, c := range []struct {
		name   string
		env    []string
		userns bool // asnobody in a user namespace of its own
		want   string
	}{
		{"fuse-not-accessible", []string{fuseModeEnv + "=600"}, false, "/dev/fuse is missing or not usable by uid 65534"},
		{"seccomp-refuses-userns", []string{noUsernsEnv + "=1"}, false, "cannot create a user namespace (EPERM): run without root needs one; a container's seccomp profile"},
		{"max-user-namespaces-0", []string{usernsMaxEnv + "=0"}, true, "user namespaces are disabled (sysctl user.max_user_namespaces=0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The mount named: auto would take the filter view
			// where FUSE or the namespace is missing.
			cmd := asNobody(t, bin, "run", "--host-view=mount", "--", "true")
			cmd.Env = append(cmd.Env, c.env...)
			if c.userns {
				cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
				cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: nobody + 1}}
				cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: nobody + 1}}
				cmd.SysProcAttr.GidMappingsEnableSetgroups = true
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			status := 0
			if ee, ok := err.(*exec.ExitError); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			failsWithOneLine(t, c.name, stderr.String(), status, "neuronfs run: "+c.want)
		})
	}
}

// The conditions that cannot be made here without changing the host are
// named from the probe's inputs.
func TestRootlessProblemsAreNamed(t *testing.T) {
	eperm := fmt.Errorf("ns: tmpfs over /dev: %w", unix.EPERM)
	for _, c := range []struct {
		name string
		got  error
		want string
	}{
		{"debian-sysctl", usernsFacts{"user.max_user_namespaces": "15000", "kernel.unprivileged_userns_clone": "0"}.beforeClone(), "sysctl kernel.unprivileged_userns_clone=0"},
		{"max-0", usernsFacts{"user.max_user_namespaces": "0"}.beforeClone(), "sysctl user.max_user_namespaces=0"},
		{"limit-reached", usernsFacts{"user.max_user_namespaces": "3"}.cloneFailed(os.NewSyscallError("clone", unix.ENOSPC)), "(ENOSPC): the limit user.max_user_namespaces is reached"},
		{"clone-sysctl-first", usernsFacts{"kernel.unprivileged_userns_clone": "0"}.cloneFailed(unix.EPERM), "sysctl kernel.unprivileged_userns_clone=0"},
		{"apparmor", usernsFacts{"kernel.apparmor_restrict_unprivileged_userns": "1"}.mountFailed(eperm), "AppArmor denies mounts in unprivileged user namespaces (EPERM; sysctl kernel.apparmor_restrict_unprivileged_userns=1)"},
		// The namespace is made, its capabilities denied: the unshare of
		// the mount namespace fails at the start.
		{"apparmor-at-start", usernsFacts{"kernel.apparmor_restrict_unprivileged_userns": "1"}.cloneFailed(&os.PathError{Op: "fork/exec", Path: "/bin/neuronfs", Err: unix.EPERM}), "AppArmor denies mounts in unprivileged user namespaces (EPERM; sysctl kernel.apparmor_restrict_unprivileged_userns=1)"},
		{"seccomp", usernsFacts{"kernel.apparmor_restrict_unprivileged_userns": "0"}.cloneFailed(&os.PathError{Op: "fork/exec", Path: "/bin/neuronfs", Err: unix.EPERM}), "cannot create a user namespace (EPERM): run without root needs one; a container's seccomp profile may forbid clone(CLONE_NEWUSER)"},
		{"other-lsm", usernsFacts{"kernel.apparmor_restrict_unprivileged_userns": "0"}.mountFailed(eperm), "mounting in the user namespace was refused (EPERM)"},
		{"not-a-permission-error", usernsFacts{"kernel.apparmor_restrict_unprivileged_userns": "1"}.mountFailed(fmt.Errorf("fs: %w", unix.ENODEV)), "fs: no such device"},
	} {
		if c.got == nil || !strings.Contains(c.got.Error(), c.want) || strings.Contains(c.got.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, c.got, c.want)
		}
	}
	if err := (usernsFacts{"user.max_user_namespaces": "15000", "kernel.unprivileged_userns_clone": "1", "kernel.apparmor_restrict_unprivileged_userns": "1"}).beforeClone(); err != nil {
		t.Errorf("allowed user namespaces: %v", err)
	}
}

// Without root there is no FUSE passthrough: asking for FUSE device
// descriptors, whose mmap needs it, is refused in one line that says what
// works instead.
func TestRunRootlessFUSEDescriptors(t *testing.T) {
	bin := binaryCopy(t, "neuronfs")
	for _, flags := range [][]string{{"--device-fds=fuse"}, {"--no-chardev"}} {
		cmd := asNobody(t, bin, append(append([]string{"run", "--instance=inf2.xlarge"}, flags...), "--", "true")...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		}
		failsWithOneLine(t, strings.Join(flags, " "), stderr.String(), status, "neuronfs run: FUSE passthrough is unavailable without root")
	}
}
