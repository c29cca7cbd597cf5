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

// A process's lifetime: a thread, a child process (followed or not), an
// exec, a thread's exit, a SIGKILL and a normal exit, which also drop the
// dead process's fds (a reused pid starts afresh).
func TestLifetimeRecords(t *testing.T) {
	var got []*Record
	a := newAssembler(ioctl.Default(), func(r *Record) error { got = append(got, r); return nil })
	a.children = true
	a.fds[9] = map[int]string{5: "/dev/neuron0"}
	for _, e := range []rawEvent{
		{tid: 7, tgid: 7, kind: kindFork, args: [6]uint64{8, 7}},
		{tid: 7, tgid: 7, kind: kindFork, args: [6]uint64{9, 9}},
		{tid: 9, tgid: 9, kind: kindExec, data: []byte("/bin/client\x00junk")},
		{tid: 8, tgid: 7, kind: kindDeath, args: [6]uint64{1}},
		{tid: 9, tgid: 9, kind: kindDeath, ret: int64(unix.SIGKILL)},
		{tid: 7, tgid: 7, kind: kindDeath, ret: 3 << 8},
	} {
		if err := a.event(e); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"thread 8", "fork = 9", `exec("/bin/client")`, "thread exit 0", "killed by SIGKILL", "exit 3"}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, r := range got {
		var s string
		switch r.Op {
		case OpFork:
			s = forkText(r)
		case OpExec:
			s = `exec("` + r.Path + `")`
		case OpExit:
			s = ExitText(r)
		}
		if s != want[i] || r.Seq != i+1 {
			t.Errorf("record %d: %q (seq %d), want %q", i, s, r.Seq, want[i])
		}
	}
	if !got[5].ProcessExit || got[3].ProcessExit || got[4].Signal != int(unix.SIGKILL) {
		t.Errorf("exits %+v %+v %+v", got[3], got[4], got[5])
	}
	if _, ok := a.fds[9]; ok {
		t.Errorf("the dead process's fds are kept: %v", a.fds[9])
	}
	a.children = false
	got = nil
	a.event(rawEvent{tid: 7, tgid: 7, kind: kindFork, args: [6]uint64{10, 10}})
	if len(got) != 1 || !got[0].Untraced || forkText(got[0]) != "fork = 10 (not traced)" {
		t.Errorf("untraced child: %+v", got)
	}
}
