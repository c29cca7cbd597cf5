package chardev

import (
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// A waiting call's Gone closes once its notification is withdrawn: here
// an ordinary signal withdraws it (the filter waits without
// WAIT_KILLABLE_RECV), as SIGKILL withdraws a supervised caller's.
func TestWatchClosesWhenWithdrawn(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatal("NEURONFS_REQUIRE_FUSE=1 but not root (a seccomp filter without no_new_privs needs CAP_SYS_ADMIN)")
		}
		t.Skip("not root: a seccomp filter without no_new_privs needs CAP_SYS_ADMIN")
	}
	// getppid is notified on one thread of this process, whose goroutine
	// never unlocks it: the thread goes with the goroutine.
	type filtered struct {
		tid      int
		listener int
		err      error
	}
	ready := make(chan filtered)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		prog := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_GETPPID, Jt: 0, Jf: 1},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		}
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
		if e != 0 {
			ready <- filtered{err: e}
			return
		}
		ready <- filtered{tid: unix.Gettid(), listener: int(fd)}
		unix.Syscall(unix.SYS_GETPPID, 0, 0, 0) // restarted after the signal
		close(done)
	}()
	f := <-ready
	if f.err != nil {
		t.Fatalf("seccomp: %v", f.err)
	}
	s := &Supervisor{listener: f.listener, log: logrus.NewEntry(logrus.StandardLogger())}
	defer unix.Close(f.listener)
	var n seccompNotif
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(f.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("RECV: %v", e)
	}
	gone, stop := s.watch(n.ID)
	defer stop()
	select {
	case <-gone:
		t.Fatal("gone closed while the call was live")
	case <-time.After(5 * goneCheck):
	}
	// SIGURG (the Go runtime's preemption signal, handled and harmless)
	// interrupts the wait: the call is withdrawn and restarted.
	if err := unix.Tgkill(os.Getpid(), f.tid, unix.SIGURG); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("gone still open 10 s after the call was withdrawn")
	}
	// Let the restarted call go ahead so the thread ends.
	for {
		var m seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(f.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&m))); e != 0 {
			t.Fatalf("RECV of the restarted call: %v", e)
		}
		s.pass(m.ID)
		if m.ID != n.ID {
			break
		}
	}
	<-done
}
