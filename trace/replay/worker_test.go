package replay

import (
	"encoding/gob"
	"net"
	"testing"

	"github.com/neuronfs/neuronfs/trace"
)

// A worker serves one process's calls: each on its recorded thread's OS
// thread, with what the sequencer says is shared, handing back what the
// calls learned; it says which fds it holds, and an exec closes the
// O_CLOEXEC ones.
func TestWorkerServes(t *testing.T) {
	nodes := fakeNodes(t, 1)
	dev := nodes.dir + "/neuron0"
	tr := &trace.Trace{Records: []trace.Record{
		{Seq: 1, Op: trace.OpOpen, TID: 7, TGID: 7, FD: 4, Path: dev, Flags: 0x80000, Ret: 4}, // O_CLOEXEC
		{Seq: 2, Op: trace.OpOpen, TID: 8, TGID: 7, FD: 5, Path: dev, Ret: 5},
		{Seq: 3, Op: trace.OpClose, TID: 8, TGID: 7, FD: 5, Path: dev},
	}}
	ours, theirs := net.Pipe()
	defer ours.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(tr, Options{nodes: nodes}, theirs) }()
	enc, dec := gob.NewEncoder(ours), gob.NewDecoder(ours)
	ask := func(q request) reply {
		t.Helper()
		var p reply
		if err := enc.Encode(&q); err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Err != "" {
			t.Fatal(p.Err)
		}
		return p
	}
	sh := shared{Handles: map[uint64]uint64{1: 2}, PIDs: map[int]uint64{7: 70}}
	sh.Addrs.learn(0x1000, 0x9000, 0x1000)
	ask(request{Op: reqStart, TGID: 7})
	for i := range 2 {
		p := ask(request{Op: reqCall, Index: i, Shared: sh})
		if p.Result.Status != Match || p.Shared.Handles[1] != 2 || p.Shared.PIDs[7] != 70 || p.Shared.Addrs.translate(0x1800) != 0x9800 {
			t.Fatalf("call %d: %+v", i, p)
		}
	}
	if p := ask(request{Op: reqFDs}); len(p.FDs) != 2 || !p.FDs[4].CloExec || p.FDs[5].CloExec {
		t.Fatalf("fds %+v", p.FDs)
	}
	ask(request{Op: reqExec})
	ask(request{Op: reqThreadExit, TID: 7})
	if p := ask(request{Op: reqFDs}); len(p.FDs) != 1 || p.FDs[5].FD == 0 {
		t.Fatalf("fds after exec %+v", p.FDs)
	}
	if p := ask(request{Op: reqCall, Index: 2, Shared: sh}); p.Result.Status != Match {
		t.Fatalf("close on thread 8: %+v", p.Result)
	}
	ours.Close()
	if err := <-done; err == nil {
		t.Fatal("Serve returned no error when the sequencer went away")
	}
}
