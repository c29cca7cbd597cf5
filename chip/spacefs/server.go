package spacefs

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/neuronfs/neuronfs/internal/lockrank"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// fileName is how the daemon names a space to the server: the device's
// name and the size of its physical space, so a lookup alone creates it.
func fileName(name string, span uint64) string { return fmt.Sprintf("%s.%x", name, span) }

func parseFileName(s string) (string, uint64, bool) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return "", 0, false
	}
	span, err := strconv.ParseUint(s[i+1:], 16, 64)
	if err != nil || span == 0 || span > 1<<62 || span%extentSize != 0 {
		return "", 0, false
	}
	return s[:i], span, true
}

// root is the server's only directory: one file per physical space,
// made on first lookup, its store an unnamed file of dirFd's directory.
type root struct {
	gofs.Inode
	dirFd int

	// mu guards spaces; a lookup holds it and no store's lock, so it
	// shares their rank, a leaf.
	mu     lockrank.Mutex[lockrank.SpaceStore]
	spaces map[string]*space
}

var _ gofs.NodeLookuper = (*root)(nil)

func (r *root) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	_, span, ok := parseFileName(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sp := r.spaces[name]
	if sp == nil {
		fd, err := UnnamedFile(r.dirFd, name)
		if err != nil {
			return nil, gofs.ToErrno(err)
		}
		sp = &space{st: newStore(fd, span)}
		r.spaces[name] = sp
	}
	sp.attr(&out.Attr)
	if ch := r.GetChild(name); ch != nil {
		return ch, 0
	}
	ch := r.NewPersistentInode(ctx, sp, gofs.StableAttr{Mode: syscall.S_IFREG})
	r.AddChild(name, ch, false)
	return ch, 0
}

// UnnamedFile opens an empty file in the directory dirFd that has no
// name: nothing is left there when its holder dies. Filesystems without
// O_TMPFILE get a name (from name) that is unlinked at once.
func UnnamedFile(dirFd int, name string) (int, error) {
	fd, err := unix.Openat(dirFd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return fd, nil
	}
	tmp := fmt.Sprintf(".neuronfs-%s-%d", name, unix.Getpid())
	fd, err2 := unix.Openat(dirFd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err2 != nil {
		return -1, fmt.Errorf("unnamed file for %s: %w", name, err)
	}
	if err := unix.Unlinkat(dirFd, tmp, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("unnamed file for %s: %w", name, err)
	}
	return fd, nil
}

// space is one physical space as a file.
type space struct {
	gofs.Inode
	st *store
}

var (
	_ gofs.NodeOpener      = (*space)(nil)
	_ gofs.NodeGetattrer   = (*space)(nil)
	_ gofs.NodeReader      = (*space)(nil)
	_ gofs.NodeWriter      = (*space)(nil)
	_ gofs.NodeAllocater   = (*space)(nil)
	_ gofs.NodeSetattrer   = (*space)(nil)
	_ gofs.NodeOnForgetter = (*space)(nil)
	_ gofs.NodeFsyncer     = (*space)(nil)
)

func (sp *space) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFREG | 0o600
	a.Size = sp.st.span
	a.Blocks = sp.st.blocks()
	a.Blksize = 4096
	a.Nlink = 1
}

// Open keeps the page cache across opens (it is the memory every mapper
// shares) and asks for no FLUSH: a process that exits closing the file
// must never wait for this server.
func (sp *space) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

func (sp *space) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	sp.attr(&out.Attr)
	return 0
}

// Setattr accepts what leaves the space as it is: its size is fixed.
func (sp *space) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && sz != sp.st.span {
		return syscall.EPERM
	}
	sp.attr(&out.Attr)
	return 0
}

func (sp *space) Read(ctx context.Context, f gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if err := sp.st.read(dest, uint64(off)); err != nil {
		return nil, gofs.ToErrno(err)
	}
	n := min(uint64(len(dest)), sp.st.span-min(uint64(off), sp.st.span))
	return fuse.ReadResultData(dest[:n]), 0
}

func (sp *space) Write(ctx context.Context, f gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if err := sp.st.write(data, uint64(off)); err != nil {
		return 0, gofs.ToErrno(err)
	}
	return uint32(len(data)), 0
}

// Allocate takes the two calls the chip makes: a punch (memory freed)
// and a reservation (memory about to be written).
func (sp *space) Allocate(ctx context.Context, f gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	var err error
	switch mode {
	case unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE:
		err = sp.st.punch(off, size)
	case unix.FALLOC_FL_KEEP_SIZE:
		err = sp.st.reserve(off, size)
	default:
		return syscall.EOPNOTSUPP
	}
	return gofs.ToErrno(err)
}

// Fsync has nothing to add: the kernel wrote the dirty pages back before
// asking, and device memory owes nothing to the disk.
func (sp *space) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno { return 0 }

// OnForget closes nothing: the space lives as long as the server.
func (sp *space) OnForget() {}
