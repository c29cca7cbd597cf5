package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// A killed caller's thread id given to a new process must not let the
// daemon reach that process (issue 39, finding 1). The caller waits in a
// command the supervisor serves (its wait is killable there, unlike a
// FUSE caller's); it is killed; a new process is made on its very id
// (ns_last_pid), with memory at the address the dead call named; when the
// daemon's wait would have ended, that memory must be as the new process
// left it.

// pinAddr is where the caller's argument lives, and the new process's
// memory: a fixed address both map.
const pinAddr = 0x7e5a00000000

// pinPattern fills the new process's memory.
const pinPattern = 0xa5

// pinCmdEnv names the waiting command (pinCases) for the clients.
const pinCmdEnv = "NEURONFS_PIN_CMD"

// pinCase is a command that waits under the supervisor: hold makes it
// wait (run by pinholder with its own descriptor), call issues it at
// pinAddr (run by pinvictim).
type pinCase struct {
	name string
	cmd  uint32
	hold func(fd int) error
	arg  func(mem []byte)
}

var pinCases = []pinCase{
	{
		// Another process started core 0's init and never completes it:
		// a second start waits for it, 5 s.
		name: "CINIT_SET_STATE",
		cmd:  ioctl.CmdCInitSetState,
		hold: func(fd int) error {
			v := ioctl.CInitSet{NCID: 0, State: 1}
			if r, e := testutil.Ioctl(fd, ioctl.CmdCInitSetState, &v); r != 0 || e != 0 || v.NewState != 1 {
				return fmt.Errorf("CINIT_SET_STATE started: %d %v %+v", r, e, v)
			}
			return nil
		},
		arg: func(mem []byte) {
			v := (*ioctl.CInitSet)(unsafe.Pointer(&mem[0]))
			*v = ioctl.CInitSet{NCID: 0, State: 1, NewState: 0xffffffff}
		},
	},
}

func pinCaseNamed(name string) (pinCase, bool) {
	for _, c := range pinCases {
		if c.name == name {
			return c, true
		}
	}
	return pinCase{}, false
}

// mapPin maps a page at pinAddr.
func mapPin() ([]byte, error) {
	want := unsafe.Add(unsafe.Pointer(nil), pinAddr) // an address to map at, never dereferenced before the map
	p, err := unix.MmapPtr(-1, 0, want, 4096, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil || p != want {
		return nil, fmt.Errorf("mmap at %#x: %v (got %p)", uintptr(pinAddr), err, p)
	}
	return unsafe.Slice((*byte)(p), 4096), nil
}

func init() {
	// pinholder (inside run) makes the command wait, then starts
	// pinvictim, reaps it as soon as it dies (so its id is free), and
	// waits for the end of its standard input.
	clients["pinholder"] = func() int {
		c, ok := pinCaseNamed(os.Getenv(pinCmdEnv))
		if !ok {
			return clientFail("no command %q", os.Getenv(pinCmdEnv))
		}
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		if err := c.hold(fd); err != nil {
			return clientFail("%v", err)
		}
		victim := exec.Command(os.Args[0], "__client", "pinvictim")
		victim.Stdout, victim.Stderr = os.Stdout, os.Stderr
		if err := victim.Start(); err != nil {
			return clientFail("%v", err)
		}
		go victim.Wait()
		// The test's requests: "target" starts a pintarget and says its
		// pid, "drop" ends it, "check" prints its verdict.
		var target *exec.Cmd
		var targetIn io.WriteCloser
		var targetOut *bufio.Reader
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			switch in.Text() {
			case "target":
				target = exec.Command(os.Args[0], "__client", "pintarget")
				target.Stderr = os.Stderr
				targetIn, _ = target.StdinPipe()
				out, _ := target.StdoutPipe()
				if err := target.Start(); err != nil {
					return clientFail("%v", err)
				}
				targetOut = bufio.NewReader(out)
				if line, _ := targetOut.ReadString('\n'); line != "ready\n" {
					return clientFail("pintarget: %q", line)
				}
				fmt.Printf("target %d\n", target.Process.Pid)
			case "drop":
				target.Process.Kill()
				target.Wait()
			case "check":
				targetIn.Close()
				verdict, _ := targetOut.ReadString('\n')
				target.Wait()
				fmt.Print(verdict)
			}
		}
		return 0
	}
	// pinvictim issues the command with its argument at pinAddr from a
	// thread of its own, printing that thread's id first.
	clients["pinvictim"] = func() int {
		c, _ := pinCaseNamed(os.Getenv(pinCmdEnv))
		fd, err := unix.Open("/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			return clientFail("%v", err)
		}
		mem, err := mapPin()
		if err != nil {
			return clientFail("%v", err)
		}
		c.arg(mem)
		goruntime.LockOSThread()
		fmt.Printf("tid %d\n", unix.Gettid())
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(c.cmd), pinAddr)
		return clientFail("%s returned %d %v before the caller was killed", c.name, r, e)
	}
	// pintarget is the process made on the dead caller's id: it fills a
	// page at pinAddr, says "ready", and at the end of its standard input
	// says whether the page is still as it left it.
	clients["pintarget"] = func() int {
		mem, err := mapPin()
		if err != nil {
			return clientFail("%v", err)
		}
		for i := range mem {
			mem[i] = pinPattern
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		for i, b := range mem {
			if b != pinPattern {
				fmt.Printf("changed at +%d: % x\n", i, mem[i:min(i+16, len(mem))])
				return 0
			}
		}
		fmt.Println("untouched")
		return 0
	}
}

// TestRunPinnedCaller checks, for every command that waits, that a
// killed caller's successor on its thread id is untouched: as root with
// run --uid 65534, and rootless.
func TestRunPinnedCaller(t *testing.T) {
	testRequireRoot(t)
	sys, err := device.NewSystem(device.Config{Instance: "trn1.2xlarge"})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	for _, mode := range []string{"uid65534", "rootless"} {
		for _, c := range pinCases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				bin := binaryCopy(t, "neuronfs")
				newRun := func() *exec.Cmd {
					args := []string{"run", "--device-fds=supervisor", "--instance=trn1.2xlarge"}
					var cmd *exec.Cmd
					if mode == "rootless" {
						cmd = asNobody(t, bin, append(args, "--", bin, "__client", "pinholder")...)
					} else {
						cmd = neuronfs(t, append(args, "--uid=65534", "--gid=65534", "--", bin, "__client", "pinholder")...)
					}
					cmd.Env = append(cmd.Env, pinCmdEnv+"="+c.name)
					return cmd
				}
				// Another fork on the machine may take the id first: then the
				// scenario starts again with a new caller.
				for try := 1; !checkPinned(t, newRun(), sys.Budget(c.cmd)); try++ {
					if try == 3 {
						t.Fatalf("no process could be made on a killed caller's id in %d tries (a busy machine's forks took it each time)", try)
					}
				}
			})
		}
	}
}

// checkPinned runs the holder's run, kills the victim in its call, has
// the holder make a new process on its id, and checks that process
// after budget. It reports false when no process could be made on the id
// within budget (another fork took it), which proves nothing either way.
func checkPinned(t *testing.T, run *exec.Cmd, budget time.Duration) bool {
	stdin, err := run.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := run.Wait(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	tid, convErr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "tid "))
	if err != nil || convErr != nil {
		t.Fatalf("victim: %q %v", line, err)
	}
	// The victim is in its call once its thread shows the ioctl.
	testutil.WaitFor(t, "the victim's ioctl", budget, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", tid))
		return err == nil && strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_IOCTL)+" ")
	})
	if err := unix.Kill(tid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the victim's end", budget, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", tid))
		return err != nil
	})
	// The kernel hands out the number after ns_last_pid, unless another
	// fork takes it first: then the holder tries again.
	for deadline := time.Now().Add(budget); ; {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(tid-1)), 0); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(stdin, "target")
		line, err := out.ReadString('\n')
		pid, convErr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "target "))
		if err != nil || convErr != nil {
			t.Fatalf("holder: %q %v", line, err)
		}
		if pid == tid {
			break
		}
		fmt.Fprintln(stdin, "drop")
		if time.Now().After(deadline) {
			t.Logf("no process could be made on id %d within %v", tid, budget)
			return false
		}
	}
	// When the daemon's wait would have ended, with its slack, its answer
	// has been written if it ever is.
	time.Sleep(budget)
	fmt.Fprintln(stdin, "check")
	if verdict, _ := out.ReadString('\n'); verdict != "untouched\n" {
		t.Errorf("the process made on the killed caller's id %d: %q", tid, verdict)
	}
	return true
}
