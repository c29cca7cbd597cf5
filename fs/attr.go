package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
)

// sysfsAttrSize is what stat reports for every sysfs attribute, and
// sysfsBlksize the block size of every sysfs inode (which has no blocks).
const (
	sysfsAttrSize = 4096
	sysfsBlksize  = 4096
)

// attrNode is one sysfs attribute: the content is rendered at open, like
// sysfs renders it on the first read of an open file.
type attrNode struct {
	gofs.Inode
	attr  device.Attr
	mtime time.Time
}

var (
	_ gofs.NodeOpener    = (*attrNode)(nil)
	_ gofs.NodeGetattrer = (*attrNode)(nil)
	_ gofs.NodeSetattrer = (*attrNode)(nil)
)

func (n *attrNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | n.attr.Mode
	out.Size = sysfsAttrSize
	if n.attr.Size != 0 {
		out.Size = n.attr.Size
	}
	out.Blksize = sysfsBlksize
	out.Nlink = 1
	out.SetTimes(&n.mtime, &n.mtime, &n.mtime)
	return 0
}

// Setattr accepts the truncation that shell redirection asks for.
func (n *attrNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

func (n *attrNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	acc := flags & syscall.O_ACCMODE
	if acc != syscall.O_RDONLY && n.attr.Store == nil {
		return nil, 0, syscall.EACCES
	}
	h := &attrFile{attr: n.attr}
	if acc != syscall.O_WRONLY && n.attr.Show != nil {
		h.content = []byte(n.attr.Show())
		// The kernel decides at open, from the opener's capabilities.
		if l := n.attr.UnprivilegedLen; l > 0 && len(h.content) > l && !openerIsAdmin(ctx) {
			h.content = h.content[:l]
		}
	}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

type attrFile struct {
	attr    device.Attr
	content []byte
}

var (
	_ gofs.FileReader = (*attrFile)(nil)
	_ gofs.FileWriter = (*attrFile)(nil)
)

func (f *attrFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if f.attr.ReadErr != 0 {
		return nil, f.attr.ReadErr
	}
	if off >= int64(len(f.content)) {
		return fuse.ReadResultData(nil), 0
	}
	end := off + int64(len(dest))
	if end > int64(len(f.content)) {
		end = int64(len(f.content))
	}
	return fuse.ReadResultData(f.content[off:end]), 0
}

func (f *attrFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if f.attr.Store == nil {
		return 0, syscall.EACCES
	}
	if errno := f.attr.Store(data); errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

// dirNode is a plain directory of the tree.
type dirNode struct {
	gofs.Inode
	mtime time.Time
}

var _ gofs.NodeGetattrer = (*dirNode)(nil)

func (n *dirNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o755
	out.Blksize = sysfsBlksize
	out.Nlink = 2
	out.SetTimes(&n.mtime, &n.mtime, &n.mtime)
	return 0
}

// linkNode is a sysfs symlink: mode 0777, one link, size 0, stamped like
// the rest of the tree.
type linkNode struct {
	gofs.Inode
	target []byte
	mtime  time.Time
}

var (
	_ gofs.NodeReadlinker = (*linkNode)(nil)
	_ gofs.NodeGetattrer  = (*linkNode)(nil)
)

func (n *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) { return n.target, 0 }

func (n *linkNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFLNK | 0o777
	out.Blksize = sysfsBlksize
	out.Nlink = 1
	out.SetTimes(&n.mtime, &n.mtime, &n.mtime)
	return 0
}

// openerIsAdmin reports whether the task behind a FUSE request has
// CAP_SYS_ADMIN in the initial user namespace (see capable).
func openerIsAdmin(ctx context.Context) bool {
	c, ok := fuse.FromContext(ctx)
	return ok && capable(int32(c.Pid), unix.CAP_SYS_ADMIN)
}
