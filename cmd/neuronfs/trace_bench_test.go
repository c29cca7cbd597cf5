package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
)

// BenchmarkTracedIoctl measures the round trip of a cheap ioctl
// (DEVICE_BASIC_INFO) on a device served by a separate daemon, from this
// process untraced and then traced by an in-process tracer writing its
// trace to a file: the tracer's cost on the traced program.
func BenchmarkTracedIoctl(b *testing.B) {
	testutil.RequireFUSE(b)
	dir := b.TempDir()
	cmd := exec.Command(os.Args[0], "mount", "--instance=trn2.3xlarge", dir)
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	node := filepath.Join(dir, "dev/neuron0")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(node); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the mount did not come up")
		}
	}
	fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	loop := func(b *testing.B) {
		var bi ioctl.DeviceBasicInfo
		for b.Loop() {
			if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); r != 0 || e != 0 {
				b.Fatalf("DEVICE_BASIC_INFO: %d %v", r, e)
			}
		}
	}
	b.Run("untraced", loop)
	b.Run("traced", func(b *testing.B) {
		out, err := os.Create(filepath.Join(b.TempDir(), "trace.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		sess, err := trace.Start(trace.Options{Out: out, Device: func(p string) bool { return strings.HasSuffix(p, "/dev/neuron0") }})
		if err != nil {
			b.Fatal(err)
		}
		if err := sess.Add(os.Getpid()); err != nil {
			b.Fatal(err)
		}
		loop(b)
		if err := sess.Stop(); err != nil {
			b.Fatal(err)
		}
		st, _ := out.Stat()
		if st.Size() < int64(b.N)*100 {
			b.Fatalf("trace of %d ioctls is only %d bytes", b.N, st.Size())
		}
	})
}
