package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// call issues cmd on f as tgid with arg placed in a fresh fake address
// space, and returns the result and the argument as the handler left it.
func call[T any](t *testing.T, ctx context.Context, f *File, tgid int32, cmd uint32, arg T) (Result, T) {
	t.Helper()
	m := &fakeMemory{base: 0x10000, mem: make([]byte, max(ioctl.Sizeof[T](), 8)+64)}
	copy(m.mem, ioctl.Bytes(&arg))
	r := &Request{Ctx: ctx, File: f, Cmd: cmd, Arg: m.base, Caller: Caller{Tid: tgid, Tgid: tgid}, Mem: m}
	if ioctl.Dir(cmd)&ioctl.DirWrite != 0 {
		r.In = append([]byte(nil), m.mem[:ioctl.Size(cmd)]...)
	}
	res := f.Dev.sys.Ioctl(r)
	out, _ := ioctl.Decode[T](m.mem)
	return res, out
}

func open(t *testing.T, d *Device, flags int, tgid int32) *File {
	t.Helper()
	f, errno := d.Open(context.Background(), Caller{Tgid: tgid}, flags)
	if errno != 0 {
		t.Fatal(errno)
	}
	return f
}

func wantErrno(t *testing.T, what string, got Result, want syscall.Errno) {
	t.Helper()
	if got != Errno(want) && !(want == 0 && got == 0) {
		t.Errorf("%s: result %d, want errno %d (%v)", what, got, want, want)
	}
}
