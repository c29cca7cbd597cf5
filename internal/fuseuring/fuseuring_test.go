//go:build linux

package fuseuring

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/testenv"
)

// The test file system: one regular file, "f", whose ioctls exercise the
// transport. The commands use the 'T' type; restricted FUSE ioctls copy
// _IOC_SIZE bytes in and out.
const (
	cmdEcho  = 3<<30 | 64<<16 | 'T'<<8 | 1 // _IOWR('T', 1, 64 bytes): out[i] = ^in[63-i]
	cmdBlock = 'T'<<8 | 2                  // _IO('T', 2): waits for release, or an interrupt
	cmdCPU   = 'T'<<8 | 3                  // _IO('T', 3): returns the CPU the handler ran on
	cmdNop   = 'T'<<8 | 4
)

// liveness bounds every wait of these tests: reaching it means a hang,
// not slowness.
const liveness = 60 * time.Second

type testFS struct {
	gofs.Inode
	entered chan struct{} // a cmdBlock handler started
	release chan struct{} // closed: cmdBlock handlers return 0
}

type testFile struct {
	gofs.Inode
	fs *testFS
}

var _ gofs.NodeIoctler = (*testFile)(nil)
var _ gofs.NodeOpener = (*testFile)(nil)

func (n *testFS) OnAdd(ctx context.Context) {
	n.AddChild("f", n.NewPersistentInode(ctx, &testFile{fs: n}, gofs.StableAttr{Mode: syscall.S_IFREG}), false)
}

func (f *testFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (f *testFile) Ioctl(ctx context.Context, fh gofs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	switch cmd {
	case cmdEcho:
		// Read the input while writing the output, as handlers do: if
		// they shared memory, the second half would read what the first
		// half wrote.
		for i := range 64 {
			output[i] = ^input[63-i]
		}
		return 0, 0
	case cmdBlock:
		f.fs.entered <- struct{}{}
		select {
		case <-f.fs.release:
			return 0, 0
		case <-ctx.Done():
			return 0, syscall.EINTR
		}
	case cmdCPU:
		var cpu, node uint32
		if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); e != 0 {
			return 0, e
		}
		return int32(cpu), 0
	case cmdNop:
		return 0, 0
	}
	return 0, syscall.ENOTTY
}

// offload sends cmdBlock to a worker, as the daemon does with waits.
func offload(opcode uint32, opIn []byte) bool {
	return opcode == 39 && len(opIn) >= 16 && le32(opIn[12:]) == cmdBlock
}

// requireURing skips (or, when the suite runs on the io_uring transport,
// fails) when the kernel cannot serve FUSE over io_uring, and otherwise
// makes sure the next mount is offered it.
func requireURing(t testing.TB) {
	t.Helper()
	testenv.RequireFUSE(t)
	why := ""
	if b, err := os.ReadFile("/sys/module/fuse/parameters/enable_uring"); err != nil {
		why = "kernel has no FUSE over io_uring: " + err.Error()
	} else if strings.TrimSpace(string(b)) != "Y" {
		if err := os.WriteFile("/sys/module/fuse/parameters/enable_uring", []byte("Y"), 0); err != nil {
			why = "enable_uring is N and not writable: " + err.Error()
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("NEURONFS_FUSE_TRANSPORT") == "uring" {
		t.Fatalf("NEURONFS_FUSE_TRANSPORT=uring but %s", why)
	}
	t.Skip(why)
}

type mounted struct {
	dir    string
	fs     *testFS
	server *fuse.Server
	tr     *Transport
	err    error // Attach's error (the classic loop serves instead)
}

// mountTest mounts the test file system at a new directory and serves it
// over io_uring (or, after failQueue, the classic loop).
func mountTest(t testing.TB, dir string, failQueue int) *mounted {
	t.Helper()
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd)
	if err := unix.Mount("uringtest", dir, "fuse.uringtest", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	root := &testFS{entered: make(chan struct{}, 16), release: make(chan struct{})}
	raw := gofs.NewNodeFS(root, &gofs.Options{})
	mopts := &fuse.MountOptions{MaxWrite: 128 << 10}
	server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), mopts)
	if err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		t.Fatal(err)
	}
	cfg := Config{FD: fd, MaxWrite: 128 << 10, MaxPages: 32, Depth: 4, Offload: offload}
	if failQueue >= 0 {
		cfg.SetFailQueue(failQueue)
	}
	m := &mounted{dir: dir, fs: root, server: server}
	m.tr, m.err = Attach(server, raw, mopts, cfg)
	if m.err != nil {
		go server.Serve()
	} else {
		go m.tr.ServeDev()
	}
	return m
}

// wait runs fn, failing the test if it has not returned within liveness.
func wait(t testing.TB, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(liveness):
		t.Fatalf("%s: still waiting after %v", what, liveness)
	}
}

func (m *mounted) unmount(t testing.TB) {
	t.Helper()
	if err := unix.Unmount(m.dir, 0); err != nil {
		t.Errorf("unmount: %v", err)
		unix.Unmount(m.dir, unix.MNT_DETACH)
	}
	if m.err == nil {
		wait(t, "transport end", m.tr.Wait)
	} else {
		wait(t, "classic loop end", m.server.Wait)
		if m.tr != nil {
			wait(t, "queues end", m.tr.WaitQueues)
		}
	}
}

func ioctl(fd int, cmd uint32, arg unsafe.Pointer) (int, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	return int(r), e
}

// onCPU runs fn on a thread pinned to cpu.
func onCPU(t testing.TB, cpu int, fn func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("pin to cpu %d: %v", cpu, err)
	}
}

func onlineCPUs(t testing.TB) []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// Every request is served on the caller's CPU, from that CPU's ring:
// lookup, open, ioctl, flush and release included.
func TestRingServesCallerCPU(t *testing.T) {
	requireURing(t)
	m := mountTest(t, t.TempDir(), -1)
	if m.err != nil {
		t.Fatal(m.err)
	}
	defer m.unmount(t)
	for _, cpu := range onlineCPUs(t) {
		before := m.tr.Served()[cpu]
		onCPU(t, cpu, func() {
			fd, err := unix.Open(m.dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Errorf("cpu %d: open: %v", cpu, err)
				return
			}
			defer unix.Close(fd)
			for range 100 {
				r, e := ioctl(fd, cmdCPU, nil)
				if e != 0 || r != cpu {
					t.Errorf("cpu %d: ioctl answered on cpu %d (errno %v)", cpu, r, e)
					return
				}
			}
		})
		if after := m.tr.Served()[cpu]; after-before < 100 {
			t.Errorf("cpu %d: its ring served %d requests, want ≥ 100", cpu, after-before)
		}
	}
}

// The reply overwrites the payload buffer the in-data arrived in; a
// handler reading its input while writing its output must still see the
// input (gotcha 9).
func TestPayloadAliasing(t *testing.T) {
	requireURing(t)
	m := mountTest(t, t.TempDir(), -1)
	if m.err != nil {
		t.Fatal(m.err)
	}
	defer m.unmount(t)
	fd, err := unix.Open(m.dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var buf [64]byte
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	in := buf
	if _, e := ioctl(fd, cmdEcho, unsafe.Pointer(&buf)); e != 0 {
		t.Fatal(e)
	}
	for i := range buf {
		if want := ^in[63-i]; buf[i] != want {
			t.Fatalf("byte %d: got %#x, want %#x", i, buf[i], want)
		}
	}
}

// A request that waits leaves its CPU's queue: others from the same CPU
// are answered meanwhile, and its own answer still arrives.
func TestBlockingLeavesQueue(t *testing.T) {
	requireURing(t)
	m := mountTest(t, t.TempDir(), -1)
	if m.err != nil {
		t.Fatal(m.err)
	}
	defer m.unmount(t)
	cpu := onlineCPUs(t)[0]
	fd, err := unix.Open(m.dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// Depth 4: more waiters than entries would stall the CPU, fewer do
	// not.
	const waiters = 2
	results := make(chan unix.Errno, waiters)
	for range waiters {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			unix.SchedSetaffinity(0, &set)
			_, e := ioctl(fd, cmdBlock, nil)
			results <- e
		}()
		wait(t, "blocking handler start", func() { <-m.fs.entered })
	}
	wait(t, "requests behind waiting ones", func() {
		onCPU(t, cpu, func() {
			for range 1000 {
				if _, e := ioctl(fd, cmdNop, nil); e != 0 {
					t.Errorf("nop: %v", e)
					return
				}
			}
		})
	})
	close(m.fs.release)
	for range waiters {
		wait(t, "blocked request's answer", func() {
			if e := <-results; e != 0 {
				t.Errorf("blocking ioctl: %v", e)
			}
		})
	}
}

// An interrupt comes through /dev/fuse and reaches a request served from
// a ring.
func TestInterruptReachesRingRequest(t *testing.T) {
	requireURing(t)
	m := mountTest(t, t.TempDir(), -1)
	if m.err != nil {
		t.Fatal(m.err)
	}
	defer m.unmount(t)
	fd, err := unix.Open(m.dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tid := make(chan int, 1)
	res := make(chan unix.Errno, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		_, e := ioctl(fd, cmdBlock, nil)
		res <- e
	}()
	target := <-tid
	wait(t, "blocking handler start", func() { <-m.fs.entered })
	// SIGURG is the Go runtime's own preemption signal: harmless, and it
	// makes the kernel send FUSE_INTERRUPT.
	var e unix.Errno
	wait(t, "interrupted request's answer", func() {
		for {
			unix.Tgkill(unix.Getpid(), target, unix.SIGURG)
			select {
			case e = <-res:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	if e != unix.EINTR {
		t.Fatalf("interrupted ioctl: errno %v, want EINTR", e)
	}
}

// A lazy unmount while a request is in service: the request completes,
// then the transport ends.
func TestLazyUnmountInFlight(t *testing.T) {
	m, fd, res := blockedRequest(t)
	if err := unix.Unmount(m.dir, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	close(m.fs.release)
	wait(t, "in-flight answer", func() {
		if e := <-res; e != 0 {
			t.Errorf("in-flight ioctl after umount -l: %v", e)
		}
	})
	unix.Close(fd)
	wait(t, "transport end", m.tr.Wait)
}

// Aborting the connection (what the daemon's exit paths and `neuronfs
// cleanup` do) while a request waits on a worker: the caller gets an
// error at once, the worker's late commit is refused, and every queue ends.
func TestAbortInFlight(t *testing.T) {
	m, fd, res := blockedRequest(t)
	abort(t, m.dir)
	wait(t, "aborted caller", func() {
		if e := <-res; e == 0 {
			t.Errorf("ioctl on an aborted connection succeeded")
		}
	})
	close(m.fs.release)
	unix.Close(fd)
	unix.Unmount(m.dir, unix.MNT_DETACH)
	wait(t, "transport end", m.tr.Wait)
}

// blockedRequest mounts the test file system over io_uring and leaves one
// ioctl of it waiting in its handler (until m.fs.release closes); the
// ioctl's errno arrives on res.
func blockedRequest(t *testing.T) (m *mounted, fd int, res chan unix.Errno) {
	t.Helper()
	requireURing(t)
	m = mountTest(t, t.TempDir(), -1)
	if m.err != nil {
		t.Fatal(m.err)
	}
	fd, err := unix.Open(m.dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	res = make(chan unix.Errno, 1)
	go func() {
		_, e := ioctl(fd, cmdBlock, nil)
		res <- e
	}()
	wait(t, "blocking handler start", func() { <-m.fs.entered })
	return m, fd, res
}

func abort(t testing.TB, dir string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	p := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", unix.Minor(st.Dev)|unix.Major(st.Dev)<<20)
	if err := os.WriteFile(p, []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
}

// A queue that fails its setup leaves no ring ready: the classic loop
// serves everything, nothing hangs, and the queues that did register end
// with the connection.
func TestFallbackWhenAQueueFails(t *testing.T) {
	requireURing(t)
	for _, q := range []int{0, len(onlineCPUs(t)) - 1} {
		m := mountTest(t, t.TempDir(), q)
		if m.err == nil {
			t.Fatalf("queue %d: Attach succeeded despite the injected failure", q)
		}
		for _, cpu := range onlineCPUs(t) {
			onCPU(t, cpu, func() {
				fd, err := unix.Open(m.dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Errorf("open: %v", err)
					return
				}
				defer unix.Close(fd)
				if _, e := ioctl(fd, cmdNop, nil); e != 0 {
					t.Errorf("ioctl: %v", e)
				}
			})
		}
		if m.tr != nil {
			for i, n := range m.tr.Served() {
				if n != 0 {
					t.Errorf("queue %d served %d requests on a connection that fell back", i, n)
				}
			}
		}
		m.unmount(t)
	}
}

// A daemon SIGKILLed while a caller waits in its request: the caller gets
// an error and is not left in the kernel.
func TestKilledServer(t *testing.T) {
	requireURing(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FUSEURING_TEST_SERVE="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	defer unix.Unmount(dir, unix.MNT_DETACH)
	var line [64]byte
	n, _ := out.Read(line[:])
	if got := strings.TrimSpace(string(line[:n])); got != "ready" {
		t.Fatalf("server said %q", got)
	}
	fd, err := unix.Open(dir+"/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan unix.Errno, 1)
	go func() {
		_, e := ioctl(fd, cmdBlock, nil)
		res <- e
	}()
	// The server prints "entered" when the handler starts.
	n, _ = out.Read(line[:])
	if got := strings.TrimSpace(string(line[:n])); got != "entered" {
		t.Fatalf("server said %q", got)
	}
	cmd.Process.Kill()
	wait(t, "caller of a killed server", func() {
		if e := <-res; e == 0 {
			t.Errorf("ioctl to a killed server succeeded")
		}
	})
	wait(t, "close", func() { unix.Close(fd) })
}

// TestMain doubles as the server of TestKilledServer.
func TestMain(m *testing.M) {
	if dir := os.Getenv("FUSEURING_TEST_SERVE"); dir != "" {
		mt := mountTest(&fatalTB{}, dir, -1)
		if mt.err != nil {
			fmt.Fprintln(os.Stderr, mt.err)
			os.Exit(1)
		}
		fmt.Println("ready")
		var once sync.Once
		go func() {
			<-mt.fs.entered
			once.Do(func() { fmt.Println("entered") })
		}()
		select {}
	}
	os.Exit(m.Run())
}

// fatalTB lets mountTest run outside a test.
type fatalTB struct{ testing.TB }

func (fatalTB) Helper() {}
func (fatalTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(1)
}
