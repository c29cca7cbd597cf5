package chardev

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// A task that is gone by the time its path is read (an open of a process
// being killed) fails the read; it must not take the supervisor down
// (process_vm_readv answers -1, which once reached a slice bound: CI saw
// the daemon panic in readPath).
func TestReadPathOfGoneTask(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if p, err := readPath(uint32(gone.Process.Pid), 0x10000, buf); err == nil {
		t.Fatalf("read %q from a task that is gone", p)
	}
	var v [16]byte
	if err := readStruct(uint32(gone.Process.Pid), 0x10000, &v); err == nil {
		t.Fatal("read a struct from a task that is gone")
	}
	// A live task, an unmapped address: EFAULT, not a panic either.
	if _, err := readPath(uint32(unix.Getpid()), 0x8, buf); err == nil {
		t.Fatal("read a path at an unmapped address")
	}
}
