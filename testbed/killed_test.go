package testbed_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
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
	fmt.Printf("READY %s %d\n", tb.Root(), cmd.Process.Pid)
	select {}
}

// A test binary SIGKILLed while a testbed and one of its commands run
// leaves neither the mount nor the command: the binary's exit guard
// aborts and detaches the one and kills the other.
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
	var root string
	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "READY %s %d", &root, &pid); n == 2 {
			break
		}
	}
	if root == "" {
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
		if !mounted && !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the helper's SIGKILL: %s mounted %v, command %d alive %v", root, mounted, pid, alive)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
