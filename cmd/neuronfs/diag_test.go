package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// lockedBuffer collects a daemon's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const dumpEnd = "=== end of goroutine dump ==="

// waitForDumps waits until the log holds n complete goroutine dumps.
func waitForDumps(t *testing.T, log fmt.Stringer, n int) string {
	t.Helper()
	waitFor(t, "a goroutine dump in the log", func() bool { return strings.Count(log.String(), dumpEnd) >= n })
	return log.String()
}

// kill -USR1 on the mount daemon writes every goroutine's stack to its log
// (stderr) and the daemon keeps serving, again and again; SIGTERM still
// ends it cleanly.
func TestSIGUSR1DumpsAndKeepsServing(t *testing.T) {
	dir := t.TempDir()
	cmd := neuronfs(t, "mount", "--instance=inf2.xlarge", dir)
	log := &lockedBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "the mount", func() bool {
		_, err := os.Stat(filepath.Join(dir, "sys/module/neuron/version"))
		return err == nil
	})
	for round := 1; round <= 2; round++ {
		if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		out := waitForDumps(t, log, round)
		if !strings.Contains(out, `msg="goroutine dump follows"`) || !strings.Contains(out, `reason=SIGUSR1`) {
			t.Fatalf("no dump record in the log:\n%.2000s", out)
		}
		// The daemon's main goroutine, waiting for a signal to unmount.
		if !strings.Contains(out, "cmd/neuronfs.cmdMount(") {
			t.Fatalf("the dump lacks the daemon's main goroutine:\n%s", out)
		}
		fd, err := unix.Open(filepath.Join(dir, "dev/neuron0"), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("after SIGUSR1 %d: open: %v", round, err)
		}
		var info ioctl.DeviceInfo
		r, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info)
		unix.Close(fd)
		if r != 0 || e != 0 {
			t.Fatalf("after SIGUSR1 %d: DEVICE_INFO = %d, %v", round, r, e)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, log)
	}
}

// Under run, the daemon is the namespace's child: kill -USR1 on the run
// command reaches it, and CMD (which does not expect SIGUSR1) goes on.
func TestRunForwardsSIGUSR1(t *testing.T) {
	// The dump goes to the daemon's log file, not to CMD's stderr.
	log := logFileReader(filepath.Join(t.TempDir(), "daemon.log"))
	cmd := neuronfs(t, "run", "--instance=inf2.xlarge", "--log-file="+string(log), "--", os.Args[0], "__client", "wait")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("client said %q", line)
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	// The filter host view's daemon is run itself (superviseView).
	if dump := waitForDumps(t, log, 1); !strings.Contains(dump, "cmd/neuronfs.cmdNsRun(") && !strings.Contains(dump, "cmd/neuronfs.superviseView(") {
		t.Fatalf("the dump lacks the serving daemon's main goroutine:\n%s", dump)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%.2000s", err, log)
	}
	if strings.Contains(stderr.String(), dumpEnd) {
		t.Fatalf("the dump is on CMD's stderr:\n%.2000s", stderr)
	}
}

// logFileReader reads a log file as it grows.
type logFileReader string

func (f logFileReader) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}
