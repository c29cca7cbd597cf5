package fs

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A lookup whose entry another lookup evicts meanwhile still asks its
// own pin: the eviction may not close it under the lookup, where the
// freed number would soon name some other file (here a pipe, which
// polls as a live task) and a gone thread's old process be answered.
func TestTgidCacheEvictionKeepsPinsInUse(t *testing.T) {
	tids := make(chan int32)
	exit := make(chan struct{})
	start := func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			tids <- int32(unix.Gettid())
			<-exit
		}()
	}
	// The process's main thread never exits: if the first goroutine got
	// it, the second cannot.
	start()
	tid := <-tids
	if tid == int32(os.Getpid()) {
		start()
		tid = <-tids
	}
	c := newTgidCache()
	defer c.close()
	if got := c.lookup(tid); got != int32(os.Getpid()) {
		t.Fatalf("thread %d: tgid %d, want %d", tid, got, os.Getpid())
	}
	close(exit)
	// The thread's exit is asynchronous to its goroutine's end.
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat("/proc/self/task/" + itoa(tid)); err == nil; _, err = os.Stat("/proc/self/task/" + itoa(tid)) {
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still there", tid)
		}
		time.Sleep(time.Millisecond)
	}
	var pipes []int
	defer func() {
		for _, fd := range pipes {
			unix.Close(fd)
		}
	}()
	c.beforeHolds = func() {
		c.beforeHolds = nil
		c.close() // what an eviction by another lookup does
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		pipes = append(pipes, p[:]...)
	}
	if got := c.lookup(tid); got != tid {
		t.Errorf("gone thread %d: tgid %d, want itself", tid, got)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
