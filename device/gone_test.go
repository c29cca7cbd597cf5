package device

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
)

// A call whose caller is gone (Caller.Gone closed: a supervised caller
// was killed mid-call) stops waiting at once instead of at its budget,
// and changes nothing the budget's expiry would not.
func TestWaitsEndWhenCallerGone(t *testing.T) {
	d := newTestSystem(t, "trn2.48xlarge").Devices[0]
	ctx := context.Background()
	a := open(t, d, syscall.O_RDWR, 100)
	b := open(t, d, syscall.O_RDWR, 200)
	// Core 0's init is started by a; CRWL slot 1 is a's as writer.
	if res, v := call(t, ctx, a, 100, ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 0, State: cinitStarted}); res != 0 || v.NewState != cinitStarted {
		t.Fatalf("CINIT_SET_STATE started: %d %+v", res, v)
	}
	res, _ := call(t, ctx, a, 100, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 1, UUID: uuid(1)})
	wantErrno(t, "writer enter", res, 0)

	for _, c := range []struct {
		name   string
		cmd    uint32
		arg    any
		budget time.Duration
	}{
		{"CINIT_SET_STATE", ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 0, State: cinitStarted}, cinitWait},
		{"CRWL_READER_ENTER", ioctl.CmdCRWLReaderEnter, ioctl.CRWL{NCID: 1, UUID: uuid(1)}, crwlReaderWait},
		{"CRWL_WRITER_ENTER", ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 1, UUID: uuid(2)}, crwlWriterWait},
	} {
		gone := make(chan struct{})
		done := make(chan Result, 1)
		start := time.Now()
		go func() {
			switch v := c.arg.(type) {
			case ioctl.CInitSet:
				res, _ := callCaller(t, b, Caller{Tid: 200, Tgid: 200, Gone: gone}, c.cmd, v)
				done <- res
			case ioctl.CRWL:
				res, _ := callCaller(t, b, Caller{Tid: 200, Tgid: 200, Gone: gone}, c.cmd, v)
				done <- res
			}
		}()
		close(gone)
		select {
		case <-done:
		case <-time.After(c.budget):
			t.Fatalf("%s: still waiting at its budget %v after its caller went", c.name, c.budget)
		}
		if el := time.Since(start); el >= c.budget {
			t.Errorf("%s: ended after %v, its budget %v", c.name, el, c.budget)
		}
	}
	// Nothing was taken for the gone callers: once a's writer leaves
	// (downgrade, then reader exit), a writer enters without waiting on a
	// phantom reader.
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLWriterDowngrade, ioctl.CRWL{NCID: 1, UUID: uuid(1)})
	wantErrno(t, "downgrade", res, 0)
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLReaderExit, ioctl.CRWL{NCID: 1, UUID: uuid(1)})
	wantErrno(t, "reader exit", res, 0)
	res, _ = call(t, ctx, b, 200, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 1, UUID: uuid(2)})
	wantErrno(t, "writer enter after the gone callers", res, 0)
}

// A gone caller's reset waits (NC_RESET_READY for a reset, DEVICE_READY
// for its own) end at once too, while the reset is still under way.
func TestResetWaitsEndWhenCallerGone(t *testing.T) {
	// Resets long enough (3 s) to tell "at once" from "at completion".
	sys, err := NewSystem(Config{Instance: "trn1.2xlarge", TimeScale: 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	d := sys.Devices[0]
	f := open(t, d, syscall.O_RDWR, 100)
	gone := make(chan struct{})
	close(gone)
	c := Caller{Tid: 100, Tgid: 100, Gone: gone}
	for _, cmd := range []uint32{ioctl.CmdNCResetReady, ioctl.CmdDeviceReady} {
		name := sys.CommandName(cmd)
		res, v := call(t, context.Background(), f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1})
		wantErrno(t, name+": NC_RESET", res, 0)
		if cmd == ioctl.CmdNCResetReady {
			callCaller(t, f, c, cmd, ioctl.DeviceReady{RequestID: v.RequestID})
		} else {
			callCaller(t, f, c, cmd, uint8(0))
		}
		d.mu.Lock()
		req := d.reset.find(v.RequestID)
		underway := req != nil && req.state == resetStarted
		d.mu.Unlock()
		if !underway {
			t.Errorf("%s: the gone caller's wait lasted until the reset completed", name)
		}
		// The reset completes; the next one may start.
		res, _ = call(t, context.Background(), f, 100, ioctl.CmdNCResetReady, ioctl.DeviceReady{RequestID: v.RequestID})
		wantErrno(t, name+": NC_RESET_READY of a live caller", res, 0)
	}
}

// callCaller is call with the whole Caller given.
func callCaller[T any](t *testing.T, f *File, c Caller, cmd uint32, arg T) (Result, T) {
	t.Helper()
	m := &fakeMemory{base: 0x10000, mem: make([]byte, max(ioctl.Sizeof[T](), 8)+64)}
	copy(m.mem, ioctl.Bytes(&arg))
	r := &Request{Ctx: context.Background(), File: f, Cmd: cmd, Arg: m.base, Caller: c, Mem: m}
	if ioctl.Dir(cmd)&ioctl.DirWrite != 0 {
		r.In = append([]byte(nil), m.mem[:ioctl.Size(cmd)]...)
	}
	res := f.Dev.sys.Ioctl(r)
	out, _ := ioctl.Decode[T](m.mem)
	return res, out
}
