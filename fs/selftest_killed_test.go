package fs_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/internal/fusectl"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

func init() {
	// selftesthold serves a mount at $NEURONFS_SELFTEST_MNT in-process,
	// as the daemon does, and stops inside the mount's self-test, with the
	// daemon's own device file open, until killed.
	helpers["selftesthold"] = func() int {
		sys, err := device.NewSystem(device.Config{Instance: "trn1.2xlarge", Major: 244})
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		var opts fs.Options // the pass's transport, as the daemon's default
		fs.WithSelfTestHold(&opts, func() {
			fmt.Println("holding")
			select {}
		})
		if _, err := fs.Mount(sys, os.Getenv("NEURONFS_SELFTEST_MNT"), opts); err != nil {
			fmt.Println("err", err)
			return 1
		}
		return 0
	}
}

// A daemon SIGKILLed while its self-test holds its own device open exits:
// that file's close sends no FLUSH to the server dying with it (which, over
// io_uring, left the daemon in D state for good).
func TestSelfTestKilledDaemonExits(t *testing.T) {
	testenv.RequireFUSE(t)
	for i := range 20 {
		mnt := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "NEURONFS_TEST_HELPER=selftesthold", "NEURONFS_SELFTEST_MNT="+mnt)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var conn uint64 // the mount's FUSE connection, which the daemon may leave hanging
		done := make(chan error, 1)
		lines := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			lines <- strings.TrimSpace(line)
			done <- cmd.Wait()
		}()
		select {
		case line := <-lines:
			if line != "holding" {
				cmd.Process.Kill()
				<-done
				t.Fatalf("the daemon did not reach its self-test: %q", line)
			}
			var st unix.Stat_t
			if err := unix.Stat(mnt, &st); err != nil {
				t.Fatal(err)
			}
			conn = fusectl.Conn(uint64(unix.Major(st.Dev)), uint64(unix.Minor(st.Dev)))
		case <-time.After(victimBudget):
			rescueMount(mnt)
			cmd.Process.Kill()
			t.Fatalf("the daemon did not reach its self-test within %v", victimBudget)
		}
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(victimBudget):
			state := procState(cmd.Process.Pid)
			// An abort may not end the flush: over io_uring it can sit on a
			// ring only the dying thread would deliver. Fail either way.
			fusectl.Abort(conn)
			rescueMount(mnt)
			t.Fatalf("kill %d: the daemon did not exit within %v; its threads: %s", i, victimBudget, state)
		}
		rescueMount(mnt) // the daemon's mount outlives it: nobody reaps it here
	}
}

// rescueMount aborts the FUSE connection mounted at dir and detaches it.
func rescueMount(dir string) {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != filepath.Clean(dir) {
			continue
		}
		var major, minor uint64
		if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err == nil {
			fusectl.Abort(fusectl.Conn(major, minor))
		}
	}
	unix.Unmount(dir, unix.MNT_DETACH)
}
