package chardev

import (
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Task is the task whose notification a Direct call serves, pinned: what
// the call does to the caller reaches that task and no other, even when
// the caller dies mid-call and its thread id goes to a new task.
type Task struct {
	Tid int32
	// Mem is an open of the task's /proc/TID/mem, made while its call
	// was live: it names that task's address space for as long as it is
	// open (reads and writes fail once the task is gone), never the
	// address space of a later owner of the thread id. Negative: none,
	// the memory is reached by Tid (tests of the daemon's own memory).
	Mem int
	// Repin, when not nil, is called when Mem reads nothing at all: the
	// address space it names is gone while the call is live (the task
	// exec'd since Mem was cached). It returns a fresh open, proven the
	// caller's, or a negative number.
	Repin func() int
	// Gone is closed once the call was withdrawn (a fatal signal ended
	// the caller's wait): no answer can reach the caller any more, so
	// nothing is worth waiting for. Nil: never closed.
	Gone <-chan struct{}
}

// openMem opens task tid's memory. The open refers to whatever task has
// the number now: only a validity check of the notification made after
// it proves that was the caller.
func openMem(tid uint32) (int, error) {
	fd, err := unix.Open("/proc/"+strconv.FormatUint(uint64(tid), 10)+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("chardev: memory of task %d: %w", tid, err)
	}
	return fd, nil
}

// goneCheck is how often a waiting call checks that its notification is
// still live. A killed caller's wait ends within about this long.
const goneCheck = 10 * time.Millisecond

// watch returns a channel closed once notification id is no longer live,
// and the function that stops watching (call it when the call is
// answered).
func (s *Supervisor) watch(id uint64) (gone <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(goneCheck)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if !s.valid(id) {
					close(ch)
					return
				}
			}
		}
	}()
	return ch, func() { close(done) }
}
