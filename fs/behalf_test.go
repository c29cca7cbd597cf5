package fs

import (
	"testing"

	"golang.org/x/sys/unix"
)

// An on-behalf open is attributed to its task while it runs, on the
// thread that makes it and no other, and not after.
func TestBehalfTableNamesTheTaskDuringTheOpen(t *testing.T) {
	b := newBehalfTable()
	const task = 424242
	var opener, during, other int32
	fd, err := b.openAs(task, func() (int, error) {
		opener = int32(unix.Gettid())
		during = b.caller(opener)
		// The opener's thread is locked to it now: a goroutine started
		// here runs on some other thread.
		otherTid := make(chan int32)
		go func() { otherTid <- int32(unix.Gettid()) }()
		other = b.caller(<-otherTid)
		return 7, nil
	})
	if fd != 7 || err != nil {
		t.Fatalf("openAs returned %d, %v; want open's 7, nil", fd, err)
	}
	if during != task {
		t.Errorf("during the open, its thread %d is attributed to %d, want task %d", opener, during, task)
	}
	if other == task {
		t.Errorf("another thread was attributed to the task too")
	}
	if got := b.caller(opener); got != opener {
		t.Errorf("after the open, thread %d is attributed to %d, want itself", opener, got)
	}
	if b.active.Load() != 0 || len(b.byTid) != 0 {
		t.Errorf("the table keeps %d entries after the open", len(b.byTid))
	}
}
