package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/ioctl"
)

// devNode is /dev/neuronN: a regular file (FUSE cannot serve a character
// device) whose open, flush, release and ioctl reach the emulated driver.
type devNode struct {
	gofs.Inode
	dev  *device.Device
	fsys *FS
}

var (
	_ gofs.NodeOpener    = (*devNode)(nil)
	_ gofs.NodeGetattrer = (*devNode)(nil)
	_ gofs.NodeIoctler   = (*devNode)(nil)
)

func (n *devNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o666
	out.Nlink = 1
	out.SetTimes(&n.fsys.mounted, &n.fsys.mounted, &n.fsys.mounted)
	return 0
}

func (n *devNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	caller := n.fsys.caller(ctx)
	defer n.fsys.watch.end(n.fsys.watch.begin(opOpen, 0, n.dev.Index, caller.Tid, caller.Tgid))
	f, errno := n.dev.Open(ctx, caller, int(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	// With passthrough (PassthroughFd) mmap, read and write go straight to
	// the device's physical memory. Without it (degraded mode), direct I/O
	// keeps the page cache out and the handle refuses read and write.
	return &devFile{f: f, fsys: n.fsys}, fuse.FOPEN_DIRECT_IO, 0
}

func (n *devNode) Ioctl(ctx context.Context, fh gofs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	df, ok := fh.(*devFile)
	if !ok {
		return 0, syscall.EBADF
	}
	caller := n.fsys.caller(ctx)
	defer n.fsys.watch.end(n.fsys.watch.begin(opIoctl, cmd, n.dev.Index, caller.Tid, caller.Tgid))
	call := &ioctlCall{
		mem: windowMemory{callerMemory: callerMemory{pid: int(caller.Tid)}, start: arg},
		req: device.Request{Ctx: ctx, File: df.f, Cmd: cmd, Arg: arg, Caller: caller},
	}
	mem, req := &call.mem, &call.req
	req.Mem, req.Maps = mem, n.fsys
	if ioctl.Dir(cmd)&ioctl.DirRead != 0 {
		mem.out = output
	}
	if ioctl.Dir(cmd)&ioctl.DirWrite != 0 {
		req.In = input
	}
	res := n.fsys.sys.Ioctl(req)
	if res < 0 && !ioctl.InResult(syscall.Errno(-res)) {
		// The kernel drops the output with an error reply; what the
		// handler wrote before failing still reaches the caller, as the
		// driver's copy_to_user would have.
		mem.flush()
		return 0, ioctl.ClampErrno(syscall.Errno(-res))
	}
	if !mem.finish(input) {
		return 0, syscall.EFAULT // the kernel's own copy-out would fault too
	}
	return int32(res), 0 // a negative result is an errno (see ioctl.InResult)
}

// ioctlCall holds one request's state in a single allocation.
type ioctlCall struct {
	req device.Request
	mem windowMemory
}

// devFile is one open file description of a device node.
type devFile struct {
	f    *device.File
	fsys *FS
}

var (
	_ gofs.FilePassthroughFder = (*devFile)(nil)
	_ gofs.FileFlusher         = (*devFile)(nil)
	_ gofs.FileReleaser        = (*devFile)(nil)
	_ gofs.FileReader          = (*devFile)(nil)
	_ gofs.FileWriter          = (*devFile)(nil)
)

// PassthroughFd hands the kernel the device's physical-memory memfd.
func (f *devFile) PassthroughFd() (int, bool) {
	if f.fsys.noPassthrough {
		return -1, false
	}
	return f.f.Dev.PhysFd(), true
}

func (f *devFile) Flush(ctx context.Context) syscall.Errno {
	caller := f.fsys.caller(ctx)
	defer f.fsys.watch.end(f.fsys.watch.begin(opFlush, 0, f.f.Dev.Index, caller.Tid, caller.Tgid))
	f.f.Flush(ctx, caller)
	return 0
}

func (f *devFile) Release(ctx context.Context) syscall.Errno {
	defer f.fsys.watch.end(f.fsys.watch.begin(opRelease, 0, f.f.Dev.Index, callerTid(ctx), 0))
	f.f.Release()
	return 0
}

// The driver registers no read or write operation: the VFS answers EINVAL.
func (f *devFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return nil, syscall.EINVAL
}

func (f *devFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return 0, syscall.EINVAL
}
