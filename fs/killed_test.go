package fs_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/fusectl"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// A killed test binary leaves nothing behind. The victim is this test
// binary running TestGuardVictim: it serves a mount in-process, holds a
// device node of it open as fd 0 (closed first at exit, so the exit
// flushes to the victim's own, by then unserved, mount: the D-state hang
// the guard exists for), and registers a child process and a network
// namespace (or, without ip, an undo command) with its guard. Then it
// dies: SIGKILLed, by a panic of its own, or by go test's -timeout panic.
const (
	victimDirEnv     = "NEURONFS_GUARD_VICTIM_DIR"
	victimNoGuardEnv = "NEURONFS_GUARD_VICTIM_NOGUARD" // for showing the hang by hand
	victimURingEnv   = "NEURONFS_GUARD_VICTIM_URING"   // serve with the default transport
	// victimBudget bounds every wait for the victim and its guard.
	victimBudget = 30 * time.Second
)

func TestKilledBinaryLeavesNothing(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Run("SIGKILL", func(t *testing.T) {
		v := startVictim(t, "10m", false)
		v.cmd.Process.Kill()
		v.check(t, "signal: killed")
	})
	// Over io_uring, a killed server of its own mount hung in about one
	// run in five before its queue threads left their queues' CPUs
	// (internal/fuseuring's package comment): a few kills in a row.
	t.Run("SIGKILL-uring", func(t *testing.T) {
		for range 4 {
			v := startVictim(t, "10m", true)
			v.cmd.Process.Kill()
			v.check(t, "signal: killed")
		}
	})
	t.Run("panic", func(t *testing.T) {
		v := startVictim(t, "10m", true)
		v.cmd.Process.Signal(syscall.SIGUSR1)
		v.check(t, "exit status 2")
		if log, _ := os.ReadFile(v.log); !strings.Contains(string(log), "the victim panics as asked") {
			t.Errorf("the victim did not die by its panic:\n%s", log)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		// The victim's timer runs from its start: it must come up (a
		// mount, a -race binary, a loaded machine) within the timeout,
		// less the guard's margin (a tenth).
		v := startVictim(t, "5s", true)
		v.check(t, "exit status 2")
		log, _ := os.ReadFile(v.log)
		if !strings.Contains(string(log), "test timed out") {
			t.Errorf("the victim did not die by the timeout:\n%s", log)
		}
		if !strings.Contains(string(log), "deadline is near: aborting") {
			t.Errorf("the guard did not abort the mount before the timeout:\n%s", log)
		}
	})
}

// TestGuardVictim is the victim; it runs only as one.
func TestGuardVictim(t *testing.T) {
	dir := os.Getenv(victimDirEnv)
	if dir == "" {
		t.Skip("runs only as TestKilledBinaryLeavesNothing's victim")
	}
	guarded := os.Getenv(victimNoGuardEnv) == ""
	sys, err := device.NewSystem(device.Config{Instance: "trn2.3xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := fs.Options{Transport: fs.TransportClassic}
	if os.Getenv(victimURingEnv) != "" {
		opts.Transport = "" // io_uring where the kernel has it
	}
	if _, err := fs.Mount(sys, mnt, opts); err != nil {
		t.Fatal(err)
	}
	// SIGUSR1 makes it panic, as a test that goes wrong would.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	guardPid := 0
	if guarded {
		testutil.GuardMount(t, mnt)
		guardPid = testutil.Guard(t).Pid()
	}
	// Children start before the device goes to fd 0: a child started
	// after would have /dev/null put over it before its exec, a flush to
	// this very mount from a vfork child whose parent thread keeps its P
	// (and so holds off a stop-the-world the flush's server would need).
	sleeper := exec.Command("sleep", "1000")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	netns := ""
	if guarded {
		testutil.GuardProcess(t, sleeper.Process.Pid)
		if _, err := exec.LookPath("ip"); err == nil {
			netns = fmt.Sprintf("nfsguard%d", os.Getpid())
			testutil.GuardCommand(t, "ip", "netns", "del", netns)
			if out, err := exec.Command("ip", "netns", "add", netns).CombinedOutput(); err != nil {
				t.Fatalf("ip netns add: %v\n%s", err, out)
			}
		} else {
			testutil.GuardCommand(t, "touch", filepath.Join(dir, "undone"))
		}
	}
	fd, err := unix.Open(filepath.Join(mnt, "dev/neuron0"), unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(fd, 0, 0); err != nil {
		t.Fatal(err)
	}
	if guarded {
		fmt.Printf("ready %d %d %d %s\n", sleeper.Process.Pid, guardPid, testutil.Guard(t).Holder(), netns)
	} else {
		fmt.Printf("ready %d\n", sleeper.Process.Pid)
	}
	<-usr1
	panic("the victim panics as asked")
}

type victim struct {
	cmd    *exec.Cmd
	done   chan error
	dir    string
	log    string
	pidfds map[string]int // the sleeper, the guard and the file holder
	netns  string
	ended  bool // its Wait has returned
}

// startVictim starts the victim with go test's -timeout; uring lets it
// serve its mount with the default transport (io_uring where the kernel
// has it).
func startVictim(t *testing.T, timeout string, uring bool) *victim {
	t.Helper()
	dir := t.TempDir()
	v := &victim{dir: dir, log: filepath.Join(dir, "victim.log"), done: make(chan error, 1), pidfds: map[string]int{}}
	logf, err := os.Create(v.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	v.cmd = exec.Command(os.Args[0], "-test.run=^TestGuardVictim$", "-test.timeout="+timeout)
	v.cmd.Env = append(os.Environ(), victimDirEnv+"="+dir)
	if uring {
		v.cmd.Env = append(v.cmd.Env, victimURingEnv+"=1")
	}
	// A file, not a pipe: the victim's guard inherits it and outlives
	// the victim, and Wait would wait for it.
	v.cmd.Stderr = logf
	out, err := v.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.GuardProcess(t, v.cmd.Process.Pid)
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if strings.HasPrefix(line, "ready ") || err != nil {
				lines <- line
				return
			}
		}
	}()
	go func() { v.done <- v.cmd.Wait() }()
	var line string
	select {
	case line = <-lines:
	case <-time.After(victimBudget):
	}
	f := strings.Fields(strings.TrimPrefix(line, "ready "))
	if len(f) < 3 {
		state := procState(v.cmd.Process.Pid)
		v.cmd.Process.Kill()
		v.rescue(t)
		log, _ := os.ReadFile(v.log)
		t.Fatalf("the victim did not come up (said %q); its threads: %s\nits log:\n%s", line, state, log)
	}
	for i, name := range []string{"sleeper", "guard", "holder"} {
		pid, _ := strconv.Atoi(f[i])
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd of the %s (%d): %v", name, pid, err)
		}
		t.Cleanup(func() { unix.Close(pidfd) })
		v.pidfds[name] = pidfd
	}
	if len(f) > 3 {
		v.netns = f[3]
	}
	return v
}

// check waits for the victim to die as want says and checks that it and
// its guard left nothing behind.
func (v *victim) check(t *testing.T, want string) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-v.done:
		v.ended = true
		if err == nil || err.Error() != want {
			t.Errorf("the victim ended with %v, want %s", err, want)
		}
	case <-time.After(victimBudget):
		state := procState(v.cmd.Process.Pid)
		v.rescue(t)
		log, _ := os.ReadFile(v.log)
		t.Fatalf("the victim did not end within %v; its threads: %s\nits log:\n%s", victimBudget, state, log)
	}
	t.Logf("the victim ended %v after the check began (its kill, or its coming up for the timeout)", time.Since(start))
	for name, pidfd := range v.pidfds {
		if !waitEnded(pidfd, victimBudget) {
			t.Errorf("the victim's %s still runs", name)
		}
	}
	mnt := filepath.Join(v.dir, "mnt")
	if mountedAt(mnt) {
		t.Errorf("%s is still mounted", mnt)
		v.rescue(t)
	}
	if v.netns != "" {
		if _, err := os.Stat(filepath.Join("/run/netns", v.netns)); err == nil {
			t.Errorf("network namespace %s is still there", v.netns)
			exec.Command("ip", "netns", "del", v.netns).Run()
		}
	} else if _, err := os.Stat(filepath.Join(v.dir, "undone")); err != nil {
		t.Errorf("the guard did not run the undo command: %v", err)
	}
	t.Logf("all clean %v after the kill", time.Since(start))
}

// rescue does the guard's job after a failure, so the failing test
// leaves no hung process and no mount either.
func (v *victim) rescue(t *testing.T) {
	mnt := filepath.Join(v.dir, "mnt")
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != mnt {
			continue
		}
		var major, minor uint64
		if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err == nil {
			fusectl.Abort(fusectl.Conn(major, minor))
		}
	}
	unix.Unmount(mnt, unix.MNT_DETACH)
	v.cmd.Process.Kill()
	for _, pidfd := range v.pidfds {
		unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	}
	if v.netns != "" {
		exec.Command("ip", "netns", "del", v.netns).Run()
	}
	if v.ended {
		return
	}
	select {
	case <-v.done:
	case <-time.After(victimBudget):
		t.Errorf("the victim still runs after an abort (state %s)", procState(v.cmd.Process.Pid))
	}
}

func mountedAt(dir string) bool {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func waitEnded(pidfd int, budget time.Duration) bool {
	deadline := time.Now().Add(budget)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 10)
		if err == nil && n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return false
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// procState is the state letter and kernel stack of each of pid's
// threads, for a failure message.
func procState(pid int) string {
	var b strings.Builder
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s", pid, task.Name())
		stat, _ := os.ReadFile(dir + "/stat")
		stack, _ := os.ReadFile(dir + "/stack")
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			s = s[i+2 : i+3]
		}
		fmt.Fprintf(&b, "\nthread %s: %s\n%s", task.Name(), s, stack)
	}
	return b.String()
}
