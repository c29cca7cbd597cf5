package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

func newTestSystem(t *testing.T, instance string) *System {
	t.Helper()
	s, err := NewSystem(Config{Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Every flush of a normal fd (dup'ed copies included) drops one reference
// of the closing tgid; the slot frees when the count reaches zero.
func TestFlushCountsPerTgid(t *testing.T) {
	d := newTestSystem(t, "trn1.2xlarge").Devices[0]
	a, errno := d.Open(context.Background(), Caller{Tgid: 10}, syscall.O_RDWR)
	if errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := d.Open(context.Background(), Caller{Tgid: 10}, syscall.O_RDONLY); errno != 0 {
		t.Fatal(errno)
	}
	a.Flush(context.Background(), Caller{Tgid: 10})
	if !d.IsAttached(10) {
		t.Fatal("detached after one of two flushes")
	}
	a.Flush(context.Background(), Caller{Tgid: 11}) // another process closing an inherited copy: not attached, no effect
	a.Flush(context.Background(), Caller{Tgid: 10})
	if d.IsAttached(10) {
		t.Fatal("still attached after both flushes")
	}
	a.Release()
	if got := d.OpenCount(); got != 1 {
		t.Fatalf("open count %d after one release, want 1", got)
	}
}

func TestAttachTableFull(t *testing.T) {
	d := newTestSystem(t, "trn1.2xlarge").Devices[0]
	for pid := int32(1); pid <= MaxProcessesPerDevice; pid++ {
		if _, errno := d.Open(context.Background(), Caller{Tgid: pid}, syscall.O_RDWR); errno != 0 {
			t.Fatalf("pid %d: %v", pid, errno)
		}
	}
	if _, errno := d.Open(context.Background(), Caller{Tgid: 99}, syscall.O_RDWR); errno != syscall.EBUSY {
		t.Fatalf("17th: %v, want EBUSY", errno)
	}
	// A free-access open never needs a slot.
	if f, errno := d.Open(context.Background(), Caller{Tgid: 99}, syscall.O_WRONLY); errno != 0 || !f.FreeAccess {
		t.Fatalf("O_WRONLY open: %v", errno)
	}
	// A process already attached opens again without a new slot.
	if _, errno := d.Open(context.Background(), Caller{Tgid: 5}, syscall.O_RDWR); errno != 0 {
		t.Fatalf("re-open by attached pid: %v", errno)
	}
}

// Every handler is registered under a command name some emulated driver
// version has.
func TestHandlersNameRealCommands(t *testing.T) {
	for name := range commands {
		known := false
		for _, v := range ioctl.Versions() {
			tab, err := ioctl.ForVersion(v)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tab.ByName(name.String()); ok {
				known = true
			}
		}
		if !known {
			t.Errorf("handler registered for unknown command %s", name)
		}
	}
}

// The commands answered as unsupported are exactly those the README lists
// as not emulated yet.
func TestUnsupportedCommands(t *testing.T) {
	want := map[string]bool{}
	tab := newTestSystem(t, "trn1.2xlarge").Table
	for _, c := range tab.Commands() {
		registered := commands[c.Macro].handler != nil
		if registered == want[c.Name] {
			t.Errorf("%s: registered %v, but the README lists it as %s", c.Name, registered, map[bool]string{true: "not emulated", false: "emulated"}[want[c.Name]])
		}
	}
}
