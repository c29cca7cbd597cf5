package fs_test

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/chardev"
	"github.com/neuronfs/neuronfs/ioctl"
)

func init() {
	// waitstdin keeps what it inherited until its stdin closes.
	helpers["waitstdin"] = func() int {
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
}

// directReleased is how long a release of a direct open may take: to be
// noticed (the close event, or else the periodic check), then the
// driver's release.
func directReleased(sys *device.System) time.Duration { return fs.DirectRescan + sys.ReleaseBudget() }

// selfTask is this test's own process as the caller of Direct.Ioctl.
func selfTask(t testing.TB) chardev.Task {
	t.Helper()
	mem, err := unix.Open("/proc/self/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(mem) })
	return chardev.Task{Tid: int32(unix.Gettid()), Mem: mem}
}

// startDirect mounts a trn2.48xlarge and serves its devices through a
// Direct, closed when the test ends. The test stays on its thread, whose
// id Lookup reads descriptors by: a Direct's open of a file backing runs
// on a thread of its own that ends after it (Chip.OpenForClient), and an
// unlocked test could have been on that thread when it took its id.
func startDirect(t *testing.T) (*testutil.Daemon, *fs.Direct) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d := testutil.StartDaemon(t, device.Config{Instance: "trn2.48xlarge"})
	x, err := d.FS.NewDirect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return d, x
}

// A direct descriptor is the device's memory file: an ioctl through
// Direct reaches the driver, and a mapping is the daemon's memory.
func TestDirectIoctlAndMmap(t *testing.T) {
	d, x := startDirect(t)
	tid := int32(unix.Gettid())
	fd, err := x.Open(0, unix.O_RDWR, tid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var bi ioctl.DeviceBasicInfo
	open, ok := x.Lookup(tid, int32(fd))
	if !ok {
		t.Fatalf("fd %d not found as a direct open", fd)
	}
	if _, ok := x.Lookup(tid, 0); ok {
		t.Fatal("fd 0 found as a direct open")
	}
	if r, e := open.Ioctl(selfTask(t), ioctl.CmdDeviceBasicInfo, uint64(uintptr(unsafe.Pointer(&bi)))); r != 0 || e != 0 || bi.Architecture == 0 {
		t.Fatalf("DEVICE_BASIC_INFO: %d %v %+v", r, e, bi)
	}
	// No kernel copy surrounds the call: the handler's own copy-out
	// fails, as the driver's would.
	if r, e := open.Ioctl(selfTask(t), ioctl.CmdDeviceBasicInfo, 0); r == 0 && e == 0 {
		t.Error("DEVICE_BASIC_INFO at NULL succeeded")
	}
	pa := d.Sys.Arch.HostBase + 1<<32 - 4096 // the page the self-test uses
	daemon, err := d.Sys.Devices[0].Chip().PhysView(pa, 4096)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(fd, int64(pa), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	copy(m, "client")
	copy(daemon[64:], "daemon")
	if !bytes.Equal(daemon[:6], []byte("client")) || !bytes.Equal(m[64:70], []byte("daemon")) {
		t.Fatal("mapping not coherent with the daemon's memory")
	}
	clear(daemon[:128])
}

// The driver's release comes at the last reference to the open file: not
// at the close of one of its descriptors while a copy, a child's copy or
// a mapping remains, and at a killed holder's death.
func TestDirectReleaseAtLastReference(t *testing.T) {
	d, x := startDirect(t)
	dev := d.Sys.Devices[0]
	tid := int32(unix.Gettid())
	held := func(want int, when string) {
		t.Helper()
		x.ReleaseGone()
		if got, open := x.Opens(0), dev.OpenCount(); got != want || open != want {
			t.Fatalf("%s: %d direct opens, driver open count %d; want %d", when, got, open, want)
		}
	}
	released := func(when string) {
		t.Helper()
		testutil.WaitFor(t, when, directReleased(d.Sys), func() bool { return x.Opens(0) == 0 && dev.OpenCount() == 0 })
	}
	// The mount's self-test open is released asynchronously.
	testutil.WaitFor(t, "the self-test's release", directReleased(d.Sys), func() bool { return dev.OpenCount() == 0 })
	fd, err := x.Open(0, unix.O_RDWR, tid)
	if err != nil {
		t.Fatal(err)
	}
	held(1, "opened")

	// A dup keeps it.
	fd2, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	held(1, "first descriptor closed, dup open")

	// A child's inherited copy keeps it.
	child := helperCmd(t, "waitstdin")
	child.ExtraFiles = []*os.File{os.NewFile(uintptr(fd2), "direct")}
	in, _ := child.StdinPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	child.ExtraFiles[0].Close()
	held(1, "parent's descriptors closed, child's open")
	in.Close()
	child.Wait()
	released("release after the child's exit")

	// A mapping keeps it.
	fd, err = x.Open(0, unix.O_RDWR, tid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(fd, int64(d.Sys.Arch.HostBase+1<<32-4096), 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	held(1, "descriptor closed, mapping left")
	unix.Munmap(m)
	released("release after the munmap")

	// A killed holder releases it.
	fd, err = x.Open(0, unix.O_RDONLY, tid)
	if err != nil {
		t.Fatal(err)
	}
	child = helperCmd(t, "waitstdin")
	child.ExtraFiles = []*os.File{os.NewFile(uintptr(fd), "direct")}
	in, _ = child.StdinPipe()
	defer in.Close()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	child.ExtraFiles[0].Close()
	held(1, "read-only open held by a child")
	child.Process.Kill()
	child.Wait()
	released("release after the holder was killed")
}

// Lookup remembers a process's descriptors from chardev.FDBase up; a
// number the supervisor saw closed and reused names the new open.
func TestDirectLookupRemembers(t *testing.T) {
	_, x := startDirect(t)
	tid := int32(unix.Gettid())
	const slot = 700
	open := func(i int) any {
		t.Helper()
		fd, err := x.Open(i, unix.O_RDWR, tid)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Dup2(fd, slot); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		o, ok := x.Lookup(tid, slot)
		if !ok {
			t.Fatalf("fd %d not found", slot)
		}
		return o
	}
	first := open(0)
	if again, _ := x.Lookup(tid, slot); again != first {
		t.Fatal("a second lookup found another open")
	}
	x.Forget(tid, slot)
	unix.Close(slot)
	second := open(1)
	if second == first {
		t.Fatal("the reused number names the closed open")
	}
	x.ForgetProcess(tid)
	if again, ok := x.Lookup(tid, slot); !ok || again != second {
		t.Fatal("lookup after ForgetProcess")
	}
	unix.Close(slot)
}
