package fs_test

import (
	"context"
	"os"
	"syscall"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The floors DEVICE_BASIC_INFO is measured against, in the same run:
// a kernel ioctl that fails at once (/dev/null) and a bare go-fuse file
// whose ioctl does nothing.

// BenchmarkIoctl runs every path under one name so that
// `benchstat -col /impl` prints each against the bare go-fuse floor.
func BenchmarkIoctl(b *testing.B) {
	b.Run("impl=gofuse-noop", benchIoctlBareGoFuse)
	b.Run("impl=neuronfs-DEVICE_BASIC_INFO", benchIoctlDeviceBasicInfo)
	b.Run("impl=neuronfs-DEVICE_INFO", benchIoctlDeviceInfo)
	b.Run("impl=kernel-devnull", benchIoctlKernelDevNull)
}

func benchIoctlKernelDevNull(b *testing.B) {
	f, err := os.Open("/dev/null")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var bi ioctl.DeviceBasicInfo
	for b.Loop() {
		testutil.Ioctl(int(f.Fd()), ioctl.CmdDeviceBasicInfo, &bi)
	}
}

type noopIoctlNode struct{ gofs.Inode }

func (n *noopIoctlNode) Ioctl(ctx context.Context, f gofs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	return 0, 0
}

func (n *noopIoctlNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func benchIoctlBareGoFuse(b *testing.B) {
	fd := bareGoFuseNode(b)
	var bi ioctl.DeviceBasicInfo
	for b.Loop() {
		if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); e != 0 {
			b.Fatal(e)
		}
	}
}

// bareGoFuseMount mounts a go-fuse file whose ioctl does nothing and
// returns its path; it goes away with the benchmark.
func bareGoFuseMount(b *testing.B) string {
	testutil.RequireFUSE(b)
	root := &gofs.Inode{}
	dir := b.TempDir()
	server, err := gofs.Mount(dir, root, &gofs.Options{
		MountOptions: fuse.MountOptions{AllowOther: true, DirectMount: true},
		OnAdd: func(ctx context.Context) {
			root.AddChild("node", root.NewPersistentInode(ctx, &noopIoctlNode{}, gofs.StableAttr{Mode: syscall.S_IFREG}), false)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	testutil.GuardMount(b, dir)
	b.Cleanup(func() { server.Unmount() })
	return dir + "/node"
}

// bareGoFuseNode opens bareGoFuseMount's file for this process.
func bareGoFuseNode(b *testing.B) int {
	fd, err := unix.Open(bareGoFuseMount(b), unix.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	return fd
}

func benchIoctlDeviceBasicInfo(b *testing.B) {
	dir, _ := testutil.Mount(b, "trn2.48xlarge")
	fd, err := unix.Open(dir+"/dev/neuron0", unix.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	var bi ioctl.DeviceBasicInfo
	for b.Loop() {
		if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); e != 0 || bi.Architecture != 3 {
			b.Fatal(e)
		}
	}
}

// DEVICE_INFO: an _IOR(ptr) command whose output is mirrored back.
func benchIoctlDeviceInfo(b *testing.B) {
	dir, _ := testutil.Mount(b, "trn2.48xlarge")
	fd, err := unix.Open(dir+"/dev/neuron0", unix.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	var di ioctl.DeviceInfo
	for b.Loop() {
		if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &di); e != 0 {
			b.Fatal(e)
		}
	}
}

// noopIoctl returns the floor operation: one no-op ioctl on a bare go-fuse
// file mounted for the benchmark.
func noopIoctl(b *testing.B) func() {
	fd := bareGoFuseNode(b)
	var bi ioctl.DeviceBasicInfo
	return func() {
		if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); e != 0 {
			b.Fatal(e)
		}
	}
}
