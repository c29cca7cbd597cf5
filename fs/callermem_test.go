package fs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// window returns a windowMemory over this process's buf, whose first
// len(out) bytes are the window.
func window(buf []byte, out int) *windowMemory {
	return &windowMemory{
		callerMemory: callerMemory{pid: os.Getpid()},
		start:        uint64(uintptr(unsafe.Pointer(&buf[0]))),
		out:          make([]byte, out),
	}
}

func addr(b []byte, off int) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) + uint64(off) }

func TestWindowWriteInsideIsDeferred(t *testing.T) {
	user := []byte("0123456789abcdef")
	m := window(user, 8)
	if n, err := m.WriteAt([]byte("WXYZ"), addr(user, 2)); n != 4 || err != nil {
		t.Fatal(n, err)
	}
	if string(user) != "0123456789abcdef" {
		t.Fatalf("deferred write reached the caller early: %q", user)
	}
	// The handler reads its own write back.
	got := make([]byte, 8)
	if n, _ := m.ReadAt(got, addr(user, 0)); n != 8 || string(got) != "01WXYZ67" {
		t.Fatalf("read %q", got[:n])
	}
	// Bytes around the span come from the caller's memory.
	if !m.finish(nil) || string(m.out) != "01WXYZ67" {
		t.Fatalf("output %q", m.out)
	}
}

func TestWindowWriteThroughKeepsOrder(t *testing.T) {
	user := []byte("0123456789abcdef")
	m := window(user, 8)
	m.WriteAt([]byte("AAAA"), addr(user, 0))
	// Merges into the span; then a write across the window's end goes to
	// the caller, after the span it overlaps.
	m.WriteAt([]byte("BBBBBB"), addr(user, 2))
	m.WriteAt([]byte("CCCC"), addr(user, 6))
	if string(user) != "AABBBBCCCCabcdef" {
		t.Fatalf("caller memory %q", user)
	}
	if !m.finish(nil) || string(m.out) != "AABBBBCC" {
		t.Fatalf("output %q", m.out)
	}
}

func TestWindowUsesKernelInput(t *testing.T) {
	user := []byte("0123456789abcdef")
	m := window(user, 8)
	m.WriteAt([]byte("ZZ"), addr(user, 6))
	in := []byte("inputABC")
	if !m.finish(in) || string(m.out) != "inputAZZ" {
		t.Fatalf("output %q", m.out)
	}
}

func TestWindowFlushOnError(t *testing.T) {
	user := []byte("0123456789abcdef")
	m := window(user, 8)
	m.WriteAt([]byte("EE"), addr(user, 1))
	if err := m.flush(); err != nil {
		t.Fatal(err)
	}
	if string(user) != "0EE3456789abcdef" {
		t.Fatalf("caller memory %q", user)
	}
}

func TestWindowOutsideWritesGoThrough(t *testing.T) {
	user := []byte("0123456789abcdef")
	m := window(user, 4)
	m.WriteAt([]byte("QQ"), addr(user, 10))
	if !bytes.Equal(user[10:12], []byte("QQ")) {
		t.Fatalf("caller memory %q", user)
	}
	if m.wroteThrough {
		t.Fatal("a write outside the window marked it")
	}
}

// A pinned memory whose address space is gone (the caller exec'd since
// the pin was cached) is replaced once through repin; without a
// replacement, or when the replacement reads nothing either, the access
// faults.
func TestPinnedMemoryRepin(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skip("no sleep to make a process whose memory goes: ", err)
	}
	dead, err := unix.Open(fmt.Sprintf("/proc/%d/mem", child.Process.Pid), unix.O_RDWR|unix.O_CLOEXEC, 0)
	child.Process.Kill()
	child.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dead)
	self, err := unix.Open("/proc/self/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(self)
	user := []byte("pinned")
	got := make([]byte, len(user))

	repins := 0
	m := pinnedMemory(dead, func() int { repins++; return self })
	if n, err := m.ReadAt(got, addr(user, 0)); n != len(user) || err != nil || string(got) != "pinned" || repins != 1 {
		t.Fatalf("read through a repinned memory: %d %v %q, %d repins", n, err, got, repins)
	}
	if n, err := m.WriteAt([]byte("PINNED"), addr(user, 0)); n != len(user) || err != nil || string(user) != "PINNED" || repins != 1 {
		t.Fatalf("write after the repin: %d %v %q, %d repins", n, err, user, repins)
	}
	m = pinnedMemory(dead, func() int { return dead })
	if n, err := m.ReadAt(got, addr(user, 0)); n != 0 || err == nil {
		t.Fatalf("read of a gone address space: %d %v, want a fault", n, err)
	}
	m = pinnedMemory(dead, nil)
	if n, err := m.WriteAt(got, addr(user, 0)); n != 0 || err == nil {
		t.Fatalf("write to a gone address space: %d %v, want a fault", n, err)
	}
}
