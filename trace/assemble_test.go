package trace

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
)

// A syscall interrupted by a signal exits first with a kernel restart code
// and, when the kernel restarts it, enters and exits again: one call, with
// the final result. When it does not come back (a handler without
// SA_RESTART), the caller saw EINTR, and so does the record.
func TestRestartedCalls(t *testing.T) {
	var got []*Record
	a := newAssembler(ioctl.Default(), func(r *Record) error { got = append(got, r); return nil })
	name := []byte("/dev/neuron0\x00")
	open := func(kind uint32, ret int64) rawEvent {
		return rawEvent{tid: 7, tgid: 7, kind: kind, nr: sysOpenat, ret: ret, args: [6]uint64{uint64(int64(unix.AT_FDCWD) & 0xffffffff), 0, 2}, data: name}
	}
	for _, e := range []rawEvent{
		open(kindEnter, 0), open(kindExit, -512), // ERESTARTSYS, then restarted:
		open(kindEnter, 0), open(kindExit, 512),
		open(kindEnter, 0), open(kindExit, -514), // ERESTARTNOHAND, and not restarted:
		{tid: 7, tgid: 7, kind: kindEnter, nr: sysClose, args: [6]uint64{512}},
		{tid: 7, tgid: 7, kind: kindExit, nr: sysClose, args: [6]uint64{512}},
	} {
		if err := a.event(e); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d records, want open, open, close: %+v", len(got), got)
	}
	if got[0].Op != OpOpen || got[0].Ret != 512 || got[0].Errno != 0 {
		t.Errorf("restarted open recorded as %+v", got[0])
	}
	if got[1].Op != OpOpen || got[1].Errno != int(unix.EINTR) {
		t.Errorf("interrupted open recorded as %+v", got[1])
	}
	if got[2].Op != OpClose {
		t.Errorf("third record %+v", got[2])
	}
}
