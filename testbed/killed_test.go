package testbed_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/exitguard"
	"github.com/neuronfs/neuronfs/testbed"
)

// killedHelperEnv makes TestKilledHelper start a testbed and a command,
// report them and wait to be killed.
const killedHelperEnv = "NEURONFS_TESTBED_KILLED_HELPER"

func TestKilledHelper(t *testing.T) {
	if os.Getenv(killedHelperEnv) != "1" {
		t.Skip("run by TestKilledBinaryLeavesNothing")
	}
	tb := testbed.New(t, testbed.Instance("inf2.xlarge"))
	cmd := tb.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The launcher's socket directory is named in the command's argv[0].
	sockDir := ""
	if i := strings.Index(cmd.Args[0], filepath.Join(os.TempDir(), "neuronfs-tb-")); i >= 0 {
		sockDir = filepath.Dir(strings.SplitN(cmd.Args[0][i:], "\n", 2)[0])
	}
	fmt.Printf("READY %s %d %s\n", tb.Root(), cmd.Process.Pid, sockDir)
	select {}
}

// A test binary SIGKILLed while a testbed and one of its commands run
// leaves neither the mount, the command nor the launch socket: the
// binary's exit guard aborts and detaches the mount, kills the command
// and removes the socket's directory.
func TestKilledBinaryLeavesNothing(t *testing.T) {
	testutil.RequireFUSE(t)
	helper := exec.Command(os.Args[0], "-test.run", "^TestKilledHelper$", "-test.v")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, exitguard.JoinEnv+"=") {
			env = append(env, kv)
		}
	}
	helper.Env = append(env, killedHelperEnv+"=1")
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.GuardProcess(t, helper.Process.Pid)
	var root, sockDir string
	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "READY %s %d %s", &root, &pid, &sockDir); n == 3 {
			break
		}
	}
	if root == "" || sockDir == "" {
		helper.Process.Kill()
		helper.Wait()
		t.Fatal("the helper never reported its testbed")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	helper.Process.Kill()
	helper.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		mounted := strings.Contains(string(mi), " "+root+" ")
		alive := syscall.Kill(pid, 0) == nil
		_, err = os.Stat(sockDir)
		sock := err == nil
		if !mounted && !alive && !sock {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the helper's SIGKILL: %s mounted %v, command %d alive %v, %s there %v", root, mounted, pid, alive, sockDir, sock)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
