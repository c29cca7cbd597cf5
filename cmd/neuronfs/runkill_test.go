package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/procfs"
)

// orphanScript is CMD for the tests below: it double-forks a daemon
// (setsid, its parent gone at once), prints that daemon's pid and its
// own, and waits.
const orphanScript = `setsid sh -c 'sleep 1000 & echo $!'; echo $$; exec sleep 1000`

// startOrphaning starts run with orphanScript (in a process group of its
// own if ownGroup) and returns run, pidfds of CMD and of its double-forked
// grandchild, and run's stderr so far.
func startOrphaning(t *testing.T, ownGroup bool) (*exec.Cmd, []int, *bytes.Buffer) {
	t.Helper()
	cmd := neuronfs(t, "run", "--", "sh", "-c", orphanScript)
	if ownGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A program that outlives run holds run's stderr: Wait must not wait
	// for it (it is the failure under test).
	cmd.WaitDelay = time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	r := bufio.NewReader(out)
	var pidfds []int
	for _, who := range []string{"the grandchild", "CMD"} {
		line, err := r.ReadString('\n')
		pid, convErr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || convErr != nil {
			t.Fatalf("%s's pid: %q (%v); run said %s", who, line, err, stderr.String())
		}
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("%s (pid %d): %v", who, pid, err)
		}
		t.Cleanup(func() {
			// Whatever the test found, leave nothing running.
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			unix.Close(pidfd)
		})
		pidfds = append(pidfds, pidfd)
	}
	go io.Copy(io.Discard, out)
	return cmd, pidfds, &stderr
}

// waitGone waits, within the budget of a daemon's start, for the
// processes of pidfds to end.
func waitGone(t *testing.T, what string, pidfds []int) {
	t.Helper()
	waitFor(t, what, func() bool {
		for _, fd := range pidfds {
			if procfs.Alive(fd) {
				return false
			}
		}
		return true
	})
}

// run's daemon dies by its death signal when run is SIGKILLed; CMD and
// the daemon CMD double-forked go with it instead of living on with a
// seccomp filter nobody answers.
func TestRunKilledStopsProgram(t *testing.T) {
	cmd, pidfds, _ := startOrphaning(t, false)
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, "CMD and its double-forked grandchild to end after run was SIGKILLed", pidfds)
}

// A SIGKILL sent to run's process group (as a CI timeout sends it) kills
// run, its daemon and CMD at once; the daemon CMD double-forked, in a
// session of its own, goes too.
func TestRunGroupKilledStopsProgram(t *testing.T) {
	cmd, pidfds, _ := startOrphaning(t, true)
	if err := unix.Kill(-cmd.Process.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitGone(t, "CMD and its double-forked grandchild to end after run's process group was SIGKILLed", pidfds)
}

// A SIGKILLed daemon takes CMD and its descendants along, and run says
// why its program died and fails.
func TestRunDaemonKilledStopsProgram(t *testing.T) {
	cmd, pidfds, stderr := startOrphaning(t, false)
	daemon := 0
	for _, d := range descendants(cmd.Process.Pid) {
		if d.parent == cmd.Process.Pid {
			daemon = d.pid
		}
	}
	if daemon == 0 {
		t.Fatal("run has no daemon")
	}
	if err := unix.Kill(daemon, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Errorf("run: %v, want exit status %d", err, 128+int(syscall.SIGKILL))
	}
	const want = "neuronfs: the daemon died (signal: killed); the program was stopped\n"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("run said %q, want the line %q", stderr.String(), want)
	}
	waitGone(t, "CMD and its double-forked grandchild to end after the daemon was SIGKILLed", pidfds)
}

// A program that ends leaves nothing behind: its supervisor ends with
// run, so what it left running could no longer open a device.
func TestRunProgramEndStopsDescendants(t *testing.T) {
	cmd := neuronfs(t, "run", "--", "sh", "-c", `setsid sh -c 'sleep 1000 & echo $!'; exit 3`)
	cmd.WaitDelay = time.Second // see startOrphaning
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("run: %v, want exit status 3", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the grandchild's pid: %q", out)
	}
	// run returned after its daemon, which waits for the keeper, which
	// waits for every descendant: the grandchild is gone (its pid unused,
	// or another process's).
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && string(b) == "sleep\x001000\x00" {
		unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("CMD's double-forked grandchild (pid %d) outlived run", pid)
	}
}

// SIGINT sent to run reaches CMD, which may handle it.
func TestRunSIGINTReachesProgram(t *testing.T) {
	cmd := neuronfs(t, "run", "--", "sh", "-c", `trap 'echo interrupted; exit 5' INT; echo ready; sleep 1000 & wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); line != "ready\n" {
		t.Fatalf("CMD said %q (%v)", line, err)
	}
	cmd.Process.Signal(unix.SIGINT)
	line, _ := r.ReadString('\n')
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 || line != "interrupted\n" {
		t.Fatalf("run: %v, CMD said %q; want exit status 5 after \"interrupted\"", err, line)
	}
}

// On a terminal, CMD is in the foreground job as without run: it reads
// the terminal (a process of another group would be stopped by SIGTTIN)
// and Ctrl-C interrupts it.
func TestRunOnTerminal(t *testing.T) {
	master, slave := openPTY(t, 80, 24)
	cmd := neuronfs(t, "run", "--", "sh", "-c", `trap 'echo interrupted; exit 5' INT; read line; echo "got $line"; sleep 1000 & wait`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	var scr screen
	go scr.readFrom(master)
	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "CMD to read the terminal", func() bool { return strings.Contains(scr.String(), "got hello") })
	if _, err := master.Write([]byte{0x03}); err != nil { // ^C
		t.Fatal(err)
	}
	waitFor(t, "Ctrl-C to interrupt CMD", func() bool { return strings.Contains(scr.String(), "interrupted") })
	err := <-exited
	exited <- err // for the cleanup
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
		t.Fatalf("run: %v, want exit status 5\n%s", err, scr.String())
	}
}
