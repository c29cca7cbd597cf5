package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

var ansiSeq = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// lastFrame returns the last complete screen top drew, without escape
// sequences, as lines.
func lastFrame(out string) []string {
	frames := strings.Split(out, ansiHome)
	if len(frames) < 3 {
		return nil
	}
	f := frames[len(frames)-2] // the last one may still be arriving
	return strings.Split(ansiSeq.ReplaceAllString(strings.ReplaceAll(f, "\r", ""), ""), "\n")
}

// coreRow returns the columns of core nc's row in lines (the first device).
func coreRow(lines []string, nc string) []string {
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 10 && f[0] == nc {
			return f
		}
	}
	return nil
}

func ringDoorbells(t *testing.T, dir string, core uint32, n int) {
	t.Helper()
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range n {
		// Any semaphore increment of 1 rings the exec doorbell.
		if err := d.Doorbell(core, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// top on a terminal: live counters, q quits, the terminal is restored.
func TestTopLiveOnTerminal(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.3xlarge")
	master, slave := openPTY(t, 160, 60)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "top", "--root", dir, "--interval", "100ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	var scr screen
	go scr.readFrom(master)

	waitFor(t, "the first screen", func() bool { return coreRow(lastFrame(scr.String()), "nc1") != nil })
	if row := coreRow(lastFrame(scr.String()), "nc1"); row[3] != "0" {
		t.Fatalf("nc1 before any exec: %v", row)
	}
	if during, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err != nil || during.Lflag&unix.ICANON != 0 || during.Lflag&unix.ECHO != 0 {
		t.Fatalf("terminal not in raw mode while top runs: %+v %v", during, err)
	}

	ringDoorbells(t, dir, 1, 3)
	waitFor(t, "nc1 to show 3 inferences", func() bool {
		row := coreRow(lastFrame(scr.String()), "nc1")
		return row != nil && row[3] == "3"
	})
	if row := coreRow(lastFrame(scr.String()), "nc0"); row == nil || row[3] != "0" {
		t.Fatalf("nc0 changed too: %v", row)
	}
	// The frame that first saw the change shows a rate.
	if !sawRateIn(scr.String()) {
		t.Fatalf("no frame showed a non-zero INFER/s for nc1:\n%q", tail(scr.String()))
	}

	if _, err := master.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("top after q: %v\n%q", err, tail(scr.String()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("top did not quit on q")
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Fatalf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
	waitFor(t, "the screen restored", func() bool {
		return strings.HasSuffix(scr.String(), ansiShowCursor+ansiMainScreen)
	})
}

// sawRateIn reports whether any frame showed nc1 with a non-zero rate.
func sawRateIn(out string) bool {
	for _, f := range strings.Split(out, ansiHome) {
		lines := strings.Split(ansiSeq.ReplaceAllString(strings.ReplaceAll(f, "\r", ""), ""), "\n")
		if row := coreRow(lines, "nc1"); row != nil {
			if r, err := strconv.ParseFloat(row[2], 64); err == nil && r > 0 {
				return true
			}
		}
	}
	return false
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// SIGTERM also restores the terminal.
func TestTopRestoresTerminalOnSignal(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.2xlarge")
	master, slave := openPTY(t, 120, 40)
	before, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	cmd := exec.Command(os.Args[0], "top", "--root", dir, "--interval", "50ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var scr screen
	go scr.readFrom(master)
	waitFor(t, "the first screen", func() bool { return coreRow(lastFrame(scr.String()), "nc0") != nil })
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("top after SIGTERM: %v", err)
	}
	if after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); *after != *before {
		t.Fatalf("terminal mode not restored after SIGTERM")
	}
}

// Without a terminal, top prints plain snapshots.
func TestTopPlainSnapshot(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.3xlarge")
	ringDoorbells(t, dir, 2, 2)
	cmd := exec.Command(os.Args[0], "top", "--root", dir, "--once", "--interval", "50ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top --once: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "\x1b") {
		t.Fatalf("escape sequences in a plain snapshot:\n%q", out)
	}
	lines := strings.Split(string(out), "\n")
	// One snapshot: its header gives the rates' window, not a period.
	if !strings.HasPrefix(lines[0], "neuronfs top") || !strings.HasSuffix(lines[0], "rates over 50ms") ||
		strings.Contains(lines[0], "every") || !strings.HasPrefix(lines[1], "neuron0  Trainium2") {
		t.Fatalf("snapshot:\n%s", out)
	}
	if row := coreRow(lines, "nc2"); row == nil || row[3] != "2" || row[6] != "1" || row[7] != "0" {
		t.Fatalf("nc2 row %v, want 2 inferences, 1 reset request (the probe), 0 failures\n%s", row, out)
	}
	if row := coreRow(lines, "nc3"); row == nil || row[3] != "0" {
		t.Fatalf("nc3 row %v\n%s", row, out)
	}
}

func TestTopWithoutDevices(t *testing.T) {
	cmd := exec.Command(os.Args[0], "top", "--root", t.TempDir(), "--once", "--interval", "1ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || strings.Count(string(out), "\n") != 1 {
		t.Fatalf("top without devices: %v, %q; want status 1 and one line", err, out)
	}
}
