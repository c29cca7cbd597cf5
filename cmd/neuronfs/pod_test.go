package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// Two neuronfs mount daemons form a 2-node pod over the Unix socket. Both
// have their left links broken (one by flag, one by the environment), so
// the election falls back to the right links: a lame-duck pod.
func TestMountDaemonsElectOverSocket(t *testing.T) {
	name := fmt.Sprintf("e2e-%d", os.Getpid())
	common := []string{"--instance=trn2u.48xlarge", "--pod=" + name, "--pod-size=2", "--pod-timeout=60s"}
	var dirs []string
	for i, extra := range [][]string{{"--node-serial=0x2000", "--pod-link-fault=left"}, {"--node-serial=0x1000"}} {
		dir := t.TempDir()
		cmd := neuronfs(t, append(append(append([]string{"mount"}, common...), extra...), dir)...)
		if i == 1 {
			cmd.Env = append(cmd.Env, envLinkFault+"=left")
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
		waitFor(t, "the mount", func() bool {
			_, err := os.Stat(filepath.Join(dir, "sys/module/neuron/version"))
			return err == nil
		})
		dirs = append(dirs, dir)
	}
	for i, dir := range dirs {
		deadline := time.Now().Add(60 * time.Second)
		for testutil.ClassFile(t, dir, "ultraserver_mode") == "busy\n" {
			if time.Now().After(deadline) {
				t.Fatalf("daemon %d: still electing", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
		got := testutil.ClassFile(t, dir, "ultraserver_mode") + testutil.ClassFile(t, dir, "node_id_2") + testutil.ClassFile(t, dir, "server_id_2")
		want := fmt.Sprintf("2,4\n%d\n0000000000001000\n", 1-i)
		if got != want {
			t.Errorf("daemon %d: %q, want %q", i, got, want)
		}
	}
}

func TestPodFlagsChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--instance=trn2.48xlarge", "--pod=x", "--node-serial=1"},
		{"--instance=trn2u.48xlarge", "--pod=x"},
		{"--instance=trn2u.48xlarge", "--pod=x", "--node-serial=1", "--pod-size=3"},
		{"--instance=trn2u.48xlarge", "--pod-link-fault=up"},
	} {
		cmd := neuronfs(t, append(append([]string{"mount"}, args...), t.TempDir())...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Errorf("%v: accepted", args)
		} else if !strings.Contains(stderr.String(), "pod") {
			t.Errorf("%v: %q", args, stderr.String())
		}
	}
}
