package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/ia32"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// directresize tries every route by which a direct descriptor
	// resized, punched or unlocked the daemon's memory file, then checks
	// the daemon still answers and its memory holds what was written.
	// With $NEURONFS_NO_IA32 it makes no 32-bit call.
	clients["directresize"] = func() int {
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			return clientFail("%v", err)
		}
		fd := d.Fd()
		m, err := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
		if err != nil {
			return clientFail("%v", err)
		}
		view, err := m.Map()
		if err != nil {
			return clientFail("%v", err)
		}
		want := bytes.Repeat([]byte("intact "), 1<<20/7)
		copy(view, want)

		name := func(err error) string {
			if err == nil {
				return "ok"
			}
			if e, ok := err.(unix.Errno); ok {
				if e == 0 {
					return "ok"
				}
				return unix.ErrnoName(e)
			}
			return err.Error()
		}
		var out []string
		say := func(what string, err error) { out = append(out, what+"="+name(err)) }

		// A copy onto a low number, where the filter's refusals did not
		// reach, then ftruncate through it.
		say("dup2-low", unix.Dup2(fd, 5))
		// A copy that lands low anyway: SCM_RIGHTS.
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		if err := unix.Sendmsg(pair[0], []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
			return clientFail("sendmsg: %v", err)
		}
		low, err := receiveFD(os.NewFile(uintptr(pair[1]), "pair"))
		if err != nil {
			return clientFail("recvmsg: %v", err)
		}
		if low >= 512 {
			return clientFail("SCM_RIGHTS copy at %d, want a low number", low)
		}
		say("scm-ftruncate", unix.Ftruncate(low, 4096))
		say("scm-punch", unix.Fallocate(low, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 1<<40))
		whole := unix.Flock_t{Type: unix.F_UNLCK}
		say("scm-ofd-unlock", unix.FcntlFlock(uintptr(low), unix.F_OFD_SETLK, &whole))
		// POSIX locks share the list the daemon asks about its own.
		lockBytes := unix.Flock_t{Type: unix.F_WRLCK, Start: 1 << 62, Len: 1 << 20}
		say("posix-lock", unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lockBytes))
		say("scm-posix-lock", unix.FcntlFlock(uintptr(low), unix.F_SETLKW, &lockBytes))
		// truncate(2) of the file through its /proc link.
		say("truncate-path", unix.Truncate(fmt.Sprintf("/proc/self/fd/%d", fd), 4096))
		// A reopen through the link is a device open of its own.
		if again, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
			say("reopen", err)
		} else {
			say("reopen-ftruncate", unix.Ftruncate(again, 4096))
		}
		// A reopen the supervisor does not recognise as one (through a
		// symbolic link of the client's own): an open of the memory file
		// the driver knows nothing of, resized all the same.
		dir, err := os.MkdirTemp("", "directresize")
		if err != nil {
			return clientFail("%v", err)
		}
		defer os.RemoveAll(dir)
		link := dir + "/mem"
		if err := os.Symlink(fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd), link); err != nil {
			return clientFail("%v", err)
		}
		// truncate(2) through /dev/fd and through a link to /proc/self.
		say("devfd-truncate", unix.Truncate(fmt.Sprintf("/dev/fd/%d", fd), 4096))
		selfLink := dir + "/self"
		if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", fd), selfLink); err != nil {
			return clientFail("%v", err)
		}
		say("link-truncate", unix.Truncate(selfLink, 4096))
		if raw, err := unix.Open(link, unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
			say("link-reopen", err)
		} else {
			say("link-reopen-ftruncate", unix.Ftruncate(raw, 4096))
			say("link-reopen-punch", unix.Fallocate(raw, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 1<<40))
			ofd := unix.Flock_t{Type: unix.F_WRLCK, Start: 1 << 62, Len: 1 << 20}
			say("link-reopen-lock", unix.FcntlFlock(uintptr(raw), unix.F_OFD_SETLK, &ofd))
		}
		if os.Getenv("NEURONFS_NO_IA32") == "" {
			_, e := ia32.Syscall(ia32.SysFtruncate, uintptr(fd), 4096, 0)
			say("i386-ftruncate", e)
			_, e = ia32.Syscall(ia32.SysFtruncate, uintptr(low), 4096, 0)
			say("i386-scm-ftruncate", e)
		}

		// The daemon still serves, and its memory is what was written
		// (through its own copy and through the mapping).
		var bi ioctl.DeviceBasicInfo
		_, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi)
		say("ioctl", e)
		got := make([]byte, len(want))
		if err := m.Read(0, got); err != nil {
			say("memory", err)
		} else if !bytes.Equal(got, want) || !bytes.Equal(view[:len(want)], want) {
			out = append(out, "memory=changed")
		} else {
			out = append(out, "memory=intact")
		}
		fmt.Println(strings.Join(out, " "))
		return 0
	}
	// ia32probe makes a 32-bit getpid: it dies of SIGSEGV on a kernel
	// without IA32 emulation, or on a hypervisor that does not pass int
	// 0x80 on (seen on a paravirtualised VM with CONFIG_IA32_EMULATION=y).
	clients["ia32probe"] = func() int {
		if pid, e := ia32.Syscall(ia32.SysGetpid, 0, 0, 0); e != 0 || int(pid) != os.Getpid() {
			return clientFail("i386 getpid: %d %v", pid, e)
		}
		return 0
	}
}

// No route lets a direct descriptor resize, punch or unlock the daemon's
// memory file: a dup2 onto a low number, a copy received by SCM_RIGHTS,
// a 32-bit ftruncate, truncate(2) through /proc, POSIX and OFD locks on
// the bytes the daemon keeps. Each used to kill the daemon with SIGBUS,
// or tell it an open was gone. After them the daemon answers and the
// memory holds what was written, with either backing.
func TestRunDeviceFDsResizeRoutes(t *testing.T) {
	requireRun(t)
	const routes = "dup2-low=EBADF scm-ftruncate=EINVAL scm-punch=ENODEV scm-ofd-unlock=ENOLCK posix-lock=ENOLCK scm-posix-lock=ENOLCK truncate-path=EINVAL reopen-ftruncate=EINVAL devfd-truncate=EINVAL link-truncate=EINVAL link-reopen-ftruncate=EINVAL link-reopen-punch=ENODEV link-reopen-lock=ENOLCK"
	const after = "ioctl=ok memory=intact"
	want := routes + " i386-ftruncate=ENOSYS i386-scm-ftruncate=ENOSYS " + after
	var env []string
	probe := exec.Command(os.Args[0], "__client", "ia32probe")
	var probeErr bytes.Buffer
	probe.Stderr = &probeErr
	if err := probe.Run(); err != nil {
		// The fault kills the probe, or (the Go runtime catching it in
		// its own code) makes it exit 2 naming SIGSEGV.
		ee, ok := err.(*exec.ExitError)
		if !ok || (ee.ExitCode() >= 0 && !(ee.ExitCode() == 2 && strings.Contains(probeErr.String(), "signal SIGSEGV"))) {
			t.Fatalf("ia32probe: %v\n%s", err, probeErr.String())
		}
		t.Logf("no 32-bit calls: the kernel has no IA32 emulation (%v)", err)
		env = append(env, "NEURONFS_NO_IA32=1")
		want = routes + " " + after
	}
	for _, backing := range []string{"memfd", "file"} {
		t.Run(backing, func(t *testing.T) {
			args := []string{"run", "--device-fds=supervisor"}
			if backing == "file" {
				// A plain file: tmpfs holds one as long as a physical
				// space, where ext4 would need the compact store.
				dir, err := os.MkdirTemp("/dev/shm", "neuronfs-resize-")
				if err != nil {
					t.Skipf("no tmpfs at /dev/shm for a file backing: %v", err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				args = append(args, "--memory-backing=file:"+dir)
			}
			cmd := neuronfs(t, append(args, "--", os.Args[0], "__client", "directresize")...)
			cmd.Env = append(cmd.Env, env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
