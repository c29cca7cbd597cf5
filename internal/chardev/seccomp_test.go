package chardev

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An interrupted SEND or ID_VALID is issued again; any other answer,
// success included, ends the retries at once.
func TestListenerIoctlRetriesEINTR(t *testing.T) {
	for _, c := range []struct {
		answers []unix.Errno
		want    unix.Errno
		calls   int
	}{
		{[]unix.Errno{0}, 0, 1},
		{[]unix.Errno{unix.EINTR, unix.EINTR, 0}, 0, 3},
		{[]unix.Errno{unix.EINTR, unix.ENOENT, 0}, unix.ENOENT, 2},
		{[]unix.Errno{unix.EINPROGRESS}, unix.EINPROGRESS, 1},
	} {
		calls := 0
		got := untilNotInterrupted(func() unix.Errno {
			calls++
			return c.answers[calls-1]
		})
		if got != c.want || calls != c.calls {
			t.Errorf("answers %v: got %v after %d calls, want %v after %d", c.answers, got, calls, c.want, c.calls)
		}
	}
	// A real call on a listener that is no descriptor fails at once.
	var id uint64
	if e := listenerIoctl(-1, ioctlNotifIDValid, unsafe.Pointer(&id)); e != unix.EBADF {
		t.Errorf("ID_VALID on fd -1: %v, want EBADF", e)
	}
}
