package fs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/fuseuring"
)

// The FUSE transports. Classic is go-fuse's /dev/fuse read loop; io_uring
// answers each request on its caller's CPU (internal/fuseuring).
const (
	TransportAuto    = "auto"
	TransportURing   = "uring"
	TransportClassic = "classic"
)

// TransportEnv names the environment variable that picks the transport
// when Options.Transport is empty: the test suite runs once per transport
// by setting it, and daemons it spawns inherit it.
const TransportEnv = "NEURONFS_FUSE_TRANSPORT"

// TransportFile, under the mount point, reads as the transport in use.
const TransportFile = ControlDir + "/transport"

// enableURingParam is the fuse module's switch: the kernel offers
// FUSE_OVER_IO_URING in INIT, and accepts ring registrations, only while
// it reads Y.
const enableURingParam = "/sys/module/fuse/parameters/enable_uring"

// uringDepth is the number of entries per CPU queue: how many requests
// from one CPU can be in service at once. A request that waits (a reset,
// a CRWL lock, a doorbell's DMA) holds its entry until answered; callers on
// that CPU beyond this many wait in the kernel for an entry to free up.
const uringDepth = 32

// resolveTransport returns the transport asked for: the option, else the
// environment, else auto.
func resolveTransport(opt string) (string, error) {
	t := opt
	if t == "" {
		t = os.Getenv(TransportEnv)
	}
	switch t {
	case "":
		return TransportAuto, nil
	case TransportAuto, TransportURing, TransportClassic:
		return t, nil
	}
	return "", fmt.Errorf("fs: unknown FUSE transport %q (want auto, uring or classic)", t)
}

// prepareURing makes the kernel offer io_uring to the next mount: it must
// read enable_uring=Y when the mount sends INIT. It sets the parameter only
// when it is writable, and says so. It returns why io_uring cannot be
// used, or nil.
func prepareURing(log *logrus.Entry) error {
	b, err := os.ReadFile(enableURingParam)
	if err != nil {
		return fmt.Errorf("kernel has no FUSE over io_uring (%s: %w; needs Linux ≥ 6.14 with CONFIG_FUSE_IO_URING)", enableURingParam, err)
	}
	if strings.TrimSpace(string(b)) == "Y" {
		return nil
	}
	if err := os.WriteFile(enableURingParam, []byte("Y"), 0); err != nil {
		return fmt.Errorf("%s is N and not writable: %w", enableURingParam, err)
	}
	log.WithField("param", enableURingParam).Info("enabled FUSE over io_uring in the kernel (was N)")
	return nil
}

// serve starts serving the mounted connection fd over the transport
// asked for, and records which one runs. INIT has been answered when it
// returns. Every io_uring setup failure falls back to the classic loop
// before any request is served, except with an explicit "uring", which
// fails the mount instead.
func (f *FS) serve(fd int, dir string, raw fuse.RawFileSystem, mopts *fuse.MountOptions, want string, uringErr error) (*fuse.Server, error) {
	server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), mopts)
	if err != nil {
		return nil, err
	}
	classic := func(why error) (*fuse.Server, error) {
		if why != nil {
			if want == TransportURing {
				// The server's *os.File owns fd now: let its loop see
				// the connection end (ENODEV) and close it, rather than
				// have Mount close a number the file closes again later.
				unix.Unmount(dir, unix.MNT_DETACH)
				go server.Serve()
				return nil, errFDClosed{fmt.Errorf("FUSE over io_uring: %w", why)}
			}
			f.log.WithError(why).Info("FUSE transport: classic (io_uring unavailable)")
		}
		f.transport = TransportClassic
		f.waitServed = server.Wait
		go server.Serve()
		return server, server.WaitMount()
	}
	if want == TransportClassic {
		return classic(nil)
	}
	if uringErr != nil {
		return classic(uringErr)
	}
	cfg := fuseuring.Config{
		FD: fd, MaxWrite: maxWrite, MaxPages: (maxWrite + os.Getpagesize() - 1) / os.Getpagesize(),
		Depth: uringDepth, Offload: f.offload, Log: f.log,
	}
	if testFailURingQueue >= 0 {
		cfg.SetFailQueue(testFailURingQueue)
	}
	// Set before the rings start: they serve neuronfs/transport as soon as
	// Attach returns. A fallback sets classic before its loop starts.
	f.transport = TransportURing
	t, err := fuseuring.Attach(server, raw, mopts, cfg)
	if err != nil {
		// No ring is ready, so the kernel still queues every request on
		// /dev/fuse, where go-fuse's loop serves it; the queues that did
		// register end with the connection.
		s, cerr := classic(err)
		if cerr != nil {
			return s, cerr
		}
		f.uringLeft = t // nil when no queue was started
		return s, nil
	}
	f.ring = t
	f.waitServed = t.Wait
	go t.ServeDev()
	f.log.WithField("queues", t.Queues()).Debug("FUSE transport: io_uring")
	return server, nil
}

// errFDClosed marks a serve error after which the /dev/fuse descriptor is
// no longer the caller's to close.
type errFDClosed struct{ error }

func (e errFDClosed) Unwrap() error { return e.error }

// testFailURingQueue, when ≥ 0, makes that io_uring queue fail its setup
// (tests of the fallback).
var testFailURingQueue = -1

// FUSE opcodes the offload policy names (include/uapi/linux/fuse.h).
const (
	fuseLookup      = 1
	fuseForget      = 2
	fuseGetattr     = 3
	fuseReadlink    = 5
	fuseRead        = 15
	fuseStatfs      = 17
	fuseRelease     = 18
	fuseGetxattr    = 22
	fuseListxattr   = 23
	fuseOpendir     = 27
	fuseReaddir     = 28
	fuseReleasedir  = 29
	fuseAccess      = 34
	fuseIoctl       = 39
	fusePoll        = 40
	fuseBatchForget = 42
	fuseReaddirplus = 44
	fuseLseek       = 46
	fuseStatx       = 52

	ioctlInCmd = 12 // offset of cmd in struct fuse_ioctl_in
)

// offload tells the io_uring transport whether a request may wait for long
// and must leave its CPU's queue thread (a queue serves one request at a
// time: a wait inline would stall every other caller on that CPU). The
// lookups and reads of the tree, and ioctls that answer at once, run
// inline; opens (the driver's open waits out a reset), flushes (a last
// flush waits for the reset it asked for), writes to control files, and the
// commands whose row (device/commands.go) is not inline go to a worker.
// Exec doorbells run inline: a doorbell does not wait for the run it
// starts (chip/doorbell.go).
func (f *FS) offload(opcode uint32, opIn []byte) bool {
	switch opcode {
	case fuseLookup, fuseForget, fuseGetattr, fuseReadlink, fuseRead, fuseStatfs, fuseRelease, fuseGetxattr,
		fuseListxattr, fuseOpendir, fuseReaddir, fuseReleasedir, fuseAccess, fusePoll, fuseBatchForget,
		fuseReaddirplus, fuseLseek, fuseStatx:
		return false
	case fuseIoctl:
		if len(opIn) < ioctlInCmd+4 {
			return true
		}
		return f.ioctlWaits(le32(opIn[ioctlInCmd:]))
	}
	return true
}

// ioctlWaits reports whether command cmd must leave the receiving thread:
// its row in device/commands.go says.
func (f *FS) ioctlWaits(cmd uint32) bool { return !f.sys.Inline(cmd) }

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// transportNode is neuronfs/transport: "uring" or "classic", and a newline.
type transportNode struct {
	gofs.Inode
	fsys *FS
}

var (
	_ gofs.NodeOpener    = (*transportNode)(nil)
	_ gofs.NodeReader    = (*transportNode)(nil)
	_ gofs.NodeGetattrer = (*transportNode)(nil)
)

func (n *transportNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = sysfsAttrSize
	out.Nlink = 1
	out.SetTimes(&n.fsys.mounted, &n.fsys.mounted, &n.fsys.mounted)
	return 0
}

func (n *transportNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EACCES
	}
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *transportNode) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	b := []byte(n.fsys.transport + "\n")
	if off >= int64(len(b)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(b[off:]), 0
}

// Transport returns the FUSE transport serving the mount: "uring" or
// "classic".
func (f *FS) Transport() string { return f.transport }
