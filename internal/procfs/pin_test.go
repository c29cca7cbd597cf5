package procfs

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// A thread that is not its process's leader is pinned, and its process
// named, with thread pidfds and as on a kernel without them; the pin
// stops holding when the thread exits.
func TestPinThread(t *testing.T) {
	for _, threadFDs := range []bool{true, false} {
		// Each goroutine keeps its thread; if the first got the leader,
		// the second cannot.
		tids := make(chan int32)
		exit := make(chan struct{})
		start := func() {
			go func() {
				// Never unlocked: the thread exits with the goroutine.
				runtime.LockOSThread()
				tids <- int32(unix.Gettid())
				<-exit
			}()
		}
		start()
		tid := <-tids
		if tid == int32(os.Getpid()) {
			start()
			tid = <-tids
		}
		pin, err := pinThread(tid, threadFDs)
		if err != nil {
			t.Fatalf("thread pidfds %v: %v", threadFDs, err)
		}
		if pin.Tgid != int32(os.Getpid()) || !pin.Holds() {
			t.Errorf("thread pidfds %v: tgid %d (want %d), holds %v", threadFDs, pin.Tgid, os.Getpid(), pin.Holds())
		}
		close(exit)
		// The thread's exit is asynchronous to the goroutine's end.
		for i := 0; pin.Holds(); i++ {
			if i == 30000 {
				t.Fatalf("thread pidfds %v: the pin holds after its thread exited", threadFDs)
			}
			unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
		}
		unix.Close(pin.Fd)
	}
}
