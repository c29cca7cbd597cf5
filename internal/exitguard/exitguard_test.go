package exitguard_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/exitguard"
)

// The test binary doubles as the guarded process (childEnv names its
// working directory) and as a child of it that joins the guard.
const (
	childEnv  = "EXITGUARD_TEST_CHILD"
	joinerEnv = "EXITGUARD_TEST_JOINER"
)

func TestMain(m *testing.M) {
	if os.Getenv(joinerEnv) != "" {
		if err := exitguard.Join(); err != nil {
			fmt.Println("join:", err)
			os.Exit(1)
		}
		fmt.Println("joined")
		select {}
	}
	if dir := os.Getenv(childEnv); dir != "" {
		if err := guardedChild(dir); err != nil {
			fmt.Println("child:", err)
			os.Exit(1)
		}
		select {}
	}
	os.Exit(m.Run())
}

// guardedChild registers a process, a joined child, two undo commands
// (one released) and, as root, a tmpfs mount; then it reports the pids
// and waits to be killed.
func guardedChild(dir string) error {
	g, err := exitguard.Start()
	if err != nil {
		return err
	}
	sleeper := exec.Command("sleep", "1000")
	if err := sleeper.Start(); err != nil {
		return err
	}
	if _, err := g.Process(sleeper.Process.Pid); err != nil {
		return err
	}
	joiner := exec.Command("/proc/self/exe")
	joiner.Env = append(os.Environ(), joinerEnv+"=1", g.Env())
	joiner.Env = slicesDelete(joiner.Env, childEnv)
	out, err := joiner.StdoutPipe()
	if err != nil {
		return err
	}
	if err := joiner.Start(); err != nil {
		return err
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "joined\n" {
		return fmt.Errorf("joiner said %q", line)
	}
	if _, err := g.Command("touch", filepath.Join(dir, "undone")); err != nil {
		return err
	}
	r, err := g.Command("touch", filepath.Join(dir, "released"))
	if err != nil {
		return err
	}
	if err := r.Release(); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		mnt := filepath.Join(dir, "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("exitguard-test", mnt, "tmpfs", 0, ""); err != nil {
			return err
		}
		if _, err := g.Mount(mnt); err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
			return err
		}
	}
	fmt.Printf("ready %d %d\n", sleeper.Process.Pid, joiner.Process.Pid)
	return nil
}

func slicesDelete(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// A SIGKILLed process's guard kills its registered and joined processes,
// detaches its registered mount and runs its undo commands, except the
// released one.
func TestGuardCleansUpAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+dir)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	var pids []int
	for _, f := range strings.Fields(strings.TrimPrefix(line, "ready ")) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			child.Process.Kill()
			child.Wait()
			t.Fatalf("child said %q", line)
		}
		pids = append(pids, pid)
	}
	// pidfds before the kill: the guard reaps nothing of ours, but the
	// pids must not name a later process when we look.
	var pidfds []int
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd of %d: %v", pid, err)
		}
		defer unix.Close(fd)
		pidfds = append(pidfds, fd)
	}
	start := time.Now()
	child.Process.Kill()
	child.Wait()

	undone := filepath.Join(dir, "undone")
	waitFor(t, "the undo command", func() bool { _, err := os.Stat(undone); return err == nil })
	for i, fd := range pidfds {
		waitFor(t, fmt.Sprintf("process %d to end", pids[i]), func() bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return err == nil && n > 0
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "released")); err == nil {
		t.Error("the guard ran a released command")
	}
	if os.Geteuid() == 0 {
		mnt := filepath.Join(dir, "mnt")
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(mi), " "+mnt+" ") {
			t.Errorf("%s is still mounted", mnt)
		}
	}
	t.Logf("cleaned up %v after the kill", time.Since(start))
}

// waitFor polls cond for up to 10 s: the guard looks every 50 ms, but a
// loaded machine may starve it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
