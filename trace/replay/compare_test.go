package replay

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
	"github.com/neuronfs/neuronfs/trace/abi"
)

func TestCompareHandle(t *testing.T) {
	s := &state{shared: shared{Handles: map[uint64]uint64{}}}
	var res Result
	// A handle handed out: mapped, not compared.
	s.compareHandle(&res, "h", 0, 7, 9)
	if len(res.Diffs) != 0 || len(res.NotCompared) != 1 || s.Handles[7] != 9 {
		t.Fatalf("new handle: %+v %v", res, s.Handles)
	}
	// Then compared through the map.
	res = Result{}
	s.compareHandle(&res, "h", 7, 7, 9)
	if len(res.Diffs) != 0 || len(res.NotCompared) != 0 {
		t.Fatalf("mapped handle: %+v", res)
	}
	s.compareHandle(&res, "h", 7, 7, 8)
	if len(res.Diffs) != 1 || !strings.Contains(res.Diffs[0], "(replayed as 9), got 8") {
		t.Fatalf("wrong handle: %+v", res)
	}
	// An input the call left alone but that no call returned: a difference
	// only if it changed.
	res = Result{}
	s.compareHandle(&res, "h", 5, 5, 6)
	if len(res.Diffs) != 1 || res.Diffs[0] != "h: recorded 5, got 6" {
		t.Fatalf("unmapped handle: %+v", res)
	}
	// Left alone as recorded: equal values are no difference.
	res = Result{}
	s.compareHandle(&res, "h", 1, 1, 1)
	if len(res.Diffs) != 0 {
		t.Fatalf("unchanged unmapped handle: %+v", res)
	}
}

// --strict counts a value rewritten to another one as a difference; a
// handle handed out as recorded is no difference either way.
func TestStrictCountsRewrites(t *testing.T) {
	for _, strict := range []bool{false, true} {
		s := &state{shared: shared{Handles: map[uint64]uint64{}}, strict: strict}
		var res Result
		s.compareHandle(&res, "h", 0, 7, 7)
		if len(res.Diffs) != 0 {
			t.Errorf("strict=%v: a handle handed out as recorded: %+v", strict, res)
		}
		res = Result{}
		s.compareHandle(&res, "h", 0, 8, 9)
		if got := len(res.Diffs); (got == 1) != strict || len(res.NotCompared) == len(res.Diffs) {
			t.Errorf("strict=%v: a handle handed out as another: %+v", strict, res)
		}
		if strict && !strings.Contains(res.Diffs[0], "recorded 8 is 9 here") {
			t.Errorf("strict difference names neither value: %q", res.Diffs[0])
		}
	}
}

// TestFailedCallOutputs is the MEM_GET_PA of an O_WRONLY fd that reported
// "mem_handle: recorded 1, got 1": a call that failed as recorded matches,
// its argument is not compared member by member, and a changed errno is
// reported as such.
func TestFailedCallOutputs(t *testing.T) {
	tab := ioctl.Default()
	_, st, _ := abi.ForCommand(tab, ioctl.CmdMemGetPA)
	f, _ := st.Field("mem_handle")
	arg := make([]byte, st.Size)
	abi.PutUint(arg, f, 1)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	rec := func(errno unix.Errno) *trace.Record {
		return &trace.Record{Seq: 1, Op: trace.OpIoctl, TGID: 1, FD: 3, Cmd: ioctl.CmdMemGetPA, Name: "NEURON_IOCTL_MEM_GET_PA",
			Size: st.Size, Before: arg, After: arg, Ret: -1, Errno: int(errno), Error: unix.ErrnoName(errno)}
	}
	s := &state{tab: tab, fds: map[fdKey]int{{1, 3}: int(null.Fd())}, shared: shared{Handles: map[uint64]uint64{}, PIDs: map[int]uint64{1: 1}}}
	// /dev/null answers any ioctl with ENOTTY.
	res, err := s.ioctl(rec(unix.ENOTTY))
	if err != nil || res.Status != Match || len(res.Diffs) != 0 {
		t.Fatalf("same failure: %+v, %v", res, err)
	}
	res, err = s.ioctl(rec(unix.EINVAL))
	if err != nil || res.Status != Differ || len(res.Diffs) != 1 || res.Diffs[0] != "errno: recorded EINVAL, got ENOTTY" {
		t.Fatalf("other failure: %+v, %v", res, err)
	}
}

func TestCompareFields(t *testing.T) {
	const ourPID = 4321 // what the traced process 1234 is in this replay
	tab := ioctl.Default()
	_, st, _ := abi.ForCommand(tab, ioctl.CmdMemGetExtendedInfo)
	put := func(b []byte, name string, v uint64) {
		for _, f := range st.Fields {
			if f.Name == name {
				abi.PutUint(b, f, v)
			}
		}
	}
	before := make([]byte, st.Size)
	put(before, "mem_handle", 3)
	after := append([]byte{}, before...)
	put(after, "size", 4096)
	put(after, "pid", 1234)
	r := &trace.Record{Seq: 1, Op: trace.OpIoctl, TGID: 1234, Cmd: ioctl.CmdMemGetExtendedInfo, Name: "NEURON_IOCTL_MEM_GET_EXTENDED_INFO", Size: st.Size, Before: before, After: after}
	s := &state{tab: tab, shared: shared{Handles: map[uint64]uint64{3: 4}, PIDs: map[int]uint64{1234: ourPID}}}
	got := make([]byte, st.Size)
	put(got, "mem_handle", 4)
	put(got, "size", 4096)
	put(got, "pid", ourPID)
	var res Result
	for _, f := range st.Fields {
		s.compareField(&res, r, st, f, got)
	}
	if len(res.Diffs) != 0 {
		t.Fatalf("same output differs: %v", res.Diffs)
	}
	put(got, "size", 4097)
	put(got, "pid", ourPID+1)
	res = Result{}
	for _, f := range st.Fields {
		s.compareField(&res, r, st, f, got)
	}
	if len(res.Diffs) != 2 || !strings.Contains(res.Diffs[0], "size: recorded 4096, got 4097") && !strings.Contains(res.Diffs[1], "size: recorded 4096, got 4097") {
		t.Fatalf("diffs %v", res.Diffs)
	}
}
