package fs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// syncBuffer is a log output that the test reads while the daemon writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mountLogged mounts cfg's host with its log going to the returned buffer.
func mountLogged(t *testing.T, cfg device.Config) (string, *fs.FS, *syncBuffer) {
	t.Helper()
	testutil.RequireFUSE(t)
	cfg.Major = 244
	sys, err := device.NewSystem(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	l := logrus.New()
	l.SetOutput(out)
	l.SetLevel(logrus.WarnLevel)
	dir := t.TempDir()
	f, err := fs.Mount(sys, dir, fs.Options{Log: logrus.NewEntry(l)})
	if err != nil {
		sys.Close()
		t.Fatal(err)
	}
	testutil.GuardMount(t, dir)
	t.Cleanup(func() {
		f.Unmount()
		f.Abort()
		sys.Close()
	})
	return dir, f, out
}

var slowLine = regexp.MustCompile(`(?m)^.*msg="slow request".*$`)

// A CRWL writer enter that waits for another process's writer outruns a
// (shortened) budget: it is reported once, with its command, caller and
// every goroutine's stack (the waiting handler among them), and once more
// when it ends. Fast requests are not reported.
func TestSlowRequestLoggedOnce(t *testing.T) {
	dir, f, out := mountLogged(t, device.Config{Instance: "trn2.48xlarge"})
	const budget = 150 * time.Millisecond
	f.SetBudgetHook(func(op string, cmd uint32, b time.Duration) time.Duration {
		if op == "ioctl" && cmd == ioctl.CmdCRWLWriterEnter {
			return budget
		}
		return b
	})
	fd := openDev(t, dir, 0, unix.O_RDWR)
	fast := func() {
		for range 50 {
			var info ioctl.DeviceInfo
			if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info); r != 0 || e != 0 {
				t.Fatalf("DEVICE_INFO: %d %v", r, e)
			}
		}
		f2 := openDev(t, dir, 1, unix.O_RDWR)
		unix.Close(f2)
	}
	fast()

	holder := helperCmd(t, "writer", "NEURONFS_ROOT="+dir)
	pipe, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	if line, _ := bufio.NewReader(pipe).ReadString('\n'); line != "holding\n" {
		t.Fatalf("holder said %q", line)
	}
	// The holder dies well after the budget (and the watchdog's 100 ms
	// scans), well before the driver's 3 s: the wait then succeeds.
	killed := time.AfterFunc(4*budget+300*time.Millisecond, func() { holder.Process.Kill() })
	defer killed.Stop()
	runtime.LockOSThread()
	tid := unix.Gettid()
	mine := ioctl.CRWL{NCID: 3, UUID: ioctl.UUID{Value: [32]byte{9}}}
	start := time.Now()
	r, e := testutil.Ioctl(fd, ioctl.CmdCRWLWriterEnter, &mine)
	took := time.Since(start)
	runtime.UnlockOSThread()
	holder.Wait()
	if r != 0 || e != 0 {
		t.Fatalf("writer enter after the holder died: %d %v (after %v)", r, e, took)
	}
	if took < 2*budget {
		t.Fatalf("the writer enter did not wait (%v): the test proves nothing", took)
	}
	fast()
	time.Sleep(3 * 100 * time.Millisecond) // three more scans

	log := out.String()
	if testing.Verbose() {
		t.Logf("the log:\n%.3000s", log)
	}
	lines := slowLine.FindAllString(log, -1)
	if len(lines) != 1 {
		t.Fatalf("%d slow-request lines, want 1:\n%s", len(lines), log)
	}
	for _, want := range []string{
		"command=NEURON_IOCTL_CRWL_WRITER_ENTER",
		fmt.Sprintf("cmd=%#08x", ioctl.CmdCRWLWriterEnter),
		"device=neuron0", "op=ioctl",
		fmt.Sprintf("tid=%d", tid), fmt.Sprintf("tgid=%d", os.Getpid()),
		"budget=150ms", "elapsed=",
	} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("slow-request line lacks %q: %s", want, lines[0])
		}
	}
	if n := strings.Count(log, `msg="slow request finished"`); n != 1 {
		t.Errorf("%d 'finished' lines, want 1:\n%s", n, log)
	}
	begin := strings.Index(log, "=== neuronfs goroutine dump (slow request")
	end := strings.Index(log, "=== end of goroutine dump ===")
	if begin < 0 || end < begin {
		t.Fatalf("no goroutine dump in the log:\n%s", log)
	}
	if n := strings.Count(log, "=== neuronfs goroutine dump"); n != 1 {
		t.Errorf("%d dumps, want 1", n)
	}
	// The stuck request's own goroutine, waiting in the CRWL handler.
	dump := log[begin:end]
	if !strings.Contains(dump, "device.crwlWriterEnter") || !strings.Contains(dump, "(*waiters).waitLocked") {
		t.Errorf("the dump does not show the waiting handler:\n%s", dump)
	}
}

// A flush (the last close of a process) that waits for the reset the
// process asked for is reported as a flush, with its caller.
func TestSlowFlushLogged(t *testing.T) {
	// A reset takes 400 ms; the time scale gives the driver's waits room
	// for it (as device's reset tests do).
	const latency = 400 * time.Millisecond
	dir, f, out := mountLogged(t, device.Config{Instance: "trn2.3xlarge", ResetLatency: latency, TimeScale: 2 * latency.Seconds()})
	f.SetBudgetHook(func(op string, cmd uint32, b time.Duration) time.Duration {
		if op == "flush" {
			return 100 * time.Millisecond
		}
		return b
	})
	fd, err := unix.Open(dir+"/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A fast open and close (of a free-access fd) first: not reported.
	fast, err := unix.Open(dir+"/dev/neuron0", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fast)
	v := ioctl.DeviceReset{NCMap: 1}
	if r, e := testutil.Ioctl(fd, ioctl.CmdNCReset, &v); r != 0 || e != 0 {
		t.Fatalf("NC_RESET: %d %v", r, e)
	}
	runtime.LockOSThread()
	tid := unix.Gettid()
	start := time.Now()
	unix.Close(fd) // the last close: flush waits for the reset
	took := time.Since(start)
	runtime.UnlockOSThread()
	if took < 200*time.Millisecond {
		t.Fatalf("the close took %v: it did not wait for the reset", took)
	}
	time.Sleep(200 * time.Millisecond)
	log := out.String()
	lines := slowLine.FindAllString(log, -1)
	if len(lines) != 1 {
		t.Fatalf("%d slow-request lines, want 1:\n%s", len(lines), log)
	}
	for _, want := range []string{"op=flush", "command=flush", "device=neuron0", fmt.Sprintf("tid=%d", tid), fmt.Sprintf("tgid=%d", os.Getpid())} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("slow-request line lacks %q: %s", want, lines[0])
		}
	}
	if !strings.Contains(log, "(*File).Flush") {
		t.Errorf("the dump does not show the flush")
	}
}

// parkForGoroutineDump is a goroutine the dump must show.
func parkForGoroutineDump(started *sync.WaitGroup, release <-chan struct{}) {
	started.Done()
	<-release
}

// neuronfs/goroutines is root's (0400) and reads as a dump taken at read
// time, complete however large: in small pieces, at offsets, and through
// an external reader (cat), past the 4 KiB that stat reports.
func TestGoroutinesFile(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	path := dir + "/" + fs.GoroutinesFile
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != unix.S_IFREG|0o400 || st.Uid != 0 {
		t.Errorf("mode %o uid %d, want 0100400 and root", st.Mode, st.Uid)
	}
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	for range 64 {
		started.Add(1)
		go parkForGoroutineDump(&started, release)
	}
	started.Wait()
	check := func(how string, b []byte) {
		t.Helper()
		s := string(b)
		if len(b) <= 4096 {
			t.Errorf("%s: %d bytes: cut at the stat size?", how, len(b))
		}
		if !strings.HasPrefix(s, "goroutine ") || !strings.HasSuffix(s, "\n") {
			t.Errorf("%s: not a whole dump: %.80q ... %.80q", how, s, s[max(0, len(s)-80):])
		}
		if n := strings.Count(s, "fs_test.parkForGoroutineDump("); n != 64 {
			t.Errorf("%s: %d parked goroutines in the dump, want 64", how, n)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check("ReadFile", b)

	// Small reads from one open: one dump, read piece by piece.
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var pieces bytes.Buffer
	buf := make([]byte, 1000)
	for {
		n, err := file.Read(buf)
		pieces.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	check("1000-byte reads", pieces.Bytes())
	// pread past the first page of the same open gives the same bytes.
	at := make([]byte, 2000)
	if n, err := file.ReadAt(at, 5000); err != nil && err != io.EOF {
		t.Fatal(err)
	} else if !bytes.Equal(at[:n], pieces.Bytes()[5000:5000+n]) {
		t.Errorf("pread at 5000 differs from the sequential read")
	}

	// An external reader, with whatever syscalls it prefers.
	out, err := exec.Command("cat", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	check("cat", out)
}
