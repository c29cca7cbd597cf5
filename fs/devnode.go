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
	f, errno := n.fsys.open(ctx, n.dev, caller, int(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	// With passthrough (PassthroughFd), mmap goes straight to the device's
	// physical memory. Direct I/O keeps read and write off the passthrough
	// (and, without it, the page cache out): they reach the handle, which
	// refuses them as the driver does (TestDeviceReadWriteRefused).
	df := &devFile{f: f, fsys: n.fsys}
	open := uint32(fuse.FOPEN_DIRECT_IO)
	if t := n.fsys.selfTestTid.Load(); t != 0 && caller.Tid == t {
		// The daemon's own open (openSelf): no FLUSH; its release runs the
		// flush's work instead, so the daemon leaves the device as a
		// client's close would.
		open |= fuse.FOPEN_NOFLUSH
		df.flushAtRelease = &caller
	}
	return df, open, 0
}

func (n *devNode) Ioctl(ctx context.Context, fh gofs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	df, ok := fh.(*devFile)
	if !ok {
		return 0, syscall.EBADF
	}
	caller := n.fsys.caller(ctx)
	return n.fsys.ioctl(ctx, df.f, caller, callerMemory{pid: int(caller.Tid)}, cmd, arg, input, output)
}

// ioctl is the one way a device ioctl reaches the driver, from a FUSE
// request or from the seccomp supervisor (direct.go). input is what the
// kernel copied in and output the buffer it copies back over the
// caller's first _IOC_SIZE bytes at arg: both nil when no kernel copy
// surrounds the call, so every access goes to the caller's memory. um
// reaches the caller's memory (callermem.go says how each transport
// reaches it safely).
func (f *FS) ioctl(ctx context.Context, file *device.File, caller device.Caller, um callerMemory, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	defer f.watch.end(f.watch.begin(opIoctl, cmd, file.Dev.Index, caller.Tid, caller.Tgid))
	call := &ioctlCall{
		mem: windowMemory{callerMemory: um, start: arg},
		req: device.Request{Ctx: ctx, File: file, Cmd: cmd, Arg: arg, Caller: caller},
	}
	mem, req := &call.mem, &call.req
	req.Mem, req.Maps = mem, f
	if ioctl.Dir(cmd)&ioctl.DirRead != 0 {
		mem.out = output
	}
	if ioctl.Dir(cmd)&ioctl.DirWrite != 0 {
		req.In = input
	}
	res := f.sys.Ioctl(req)
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
	// flushAtRelease is the opener of a file opened without FLUSH: its
	// release flushes for it.
	flushAtRelease *device.Caller
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
	return f.f.Dev.Chip().PhysFd(), true
}

func (f *devFile) Flush(ctx context.Context) syscall.Errno {
	f.fsys.flush(ctx, f.f, f.fsys.caller(ctx))
	return 0
}

func (f *devFile) Release(ctx context.Context) syscall.Errno {
	if c := f.flushAtRelease; c != nil {
		f.fsys.flush(ctx, f.f, *c)
	}
	f.fsys.release(f.f, callerTid(ctx))
	return 0
}

// open, flush and release are the driver's open, flush and release of a
// device file, whichever transport saw them (devNode, Direct).
func (f *FS) open(ctx context.Context, d *device.Device, caller device.Caller, flags int) (*device.File, syscall.Errno) {
	defer f.watch.end(f.watch.begin(opOpen, 0, d.Index, caller.Tid, caller.Tgid))
	return d.Open(ctx, caller, flags)
}

func (f *FS) flush(ctx context.Context, file *device.File, caller device.Caller) {
	defer f.watch.end(f.watch.begin(opFlush, 0, file.Dev.Index, caller.Tid, caller.Tgid))
	file.Flush(ctx, caller)
}

func (f *FS) release(file *device.File, tid int32) {
	defer f.watch.end(f.watch.begin(opRelease, 0, file.Dev.Index, tid, 0))
	file.Release()
	// The file's mappings are gone with it: what they held raw goes too.
	f.kickRawReap()
}

// The driver registers no read or write operation: the VFS answers EINVAL.
func (f *devFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return nil, syscall.EINVAL
}

func (f *devFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return 0, syscall.EINVAL
}
