package fs_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// uringAvailable tells whether this kernel can serve FUSE over io_uring;
// when the suite runs on that transport, it must.
func uringAvailable(t *testing.T) bool {
	ok := uringUsable()
	if !ok && os.Getenv(fs.TransportEnv) == fs.TransportURing {
		t.Fatalf("%s=uring but the kernel cannot serve FUSE over io_uring", fs.TransportEnv)
	}
	return ok
}

func mountWith(t *testing.T, opts fs.Options) (*fs.FS, string) {
	t.Helper()
	d := testutil.StartDaemonOptions(t, device.Config{Instance: "trn2.3xlarge"}, opts)
	return d.FS, d.Dir
}

func readTransport(t *testing.T, dir string) string {
	b, err := os.ReadFile(dir + "/" + fs.TransportFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Each transport serves the devices, says which it is, and the io_uring one
// takes the device requests from its rings.
func TestTransports(t *testing.T) {
	for _, want := range []string{fs.TransportClassic, fs.TransportURing, fs.TransportAuto} {
		t.Run(want, func(t *testing.T) {
			testutil.RequireFUSE(t)
			avail := uringAvailable(t)
			if want == fs.TransportURing && !avail {
				t.Skip("no FUSE over io_uring here")
			}
			f, dir := mountWith(t, fs.Options{Transport: want})
			expect := want
			if want == fs.TransportAuto {
				expect = fs.TransportClassic
				if avail {
					expect = fs.TransportURing
				}
			}
			if f.Transport() != expect || readTransport(t, dir) != expect {
				t.Fatalf("transport %q (file %q), want %q", f.Transport(), readTransport(t, dir), expect)
			}
			fd := openDev(t, dir, 0, unix.O_RDWR)
			defer unix.Close(fd)
			before := sum(f.RingServed())
			for range 100 {
				var info ioctl.DeviceBasicInfo
				if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &info); e != 0 {
					t.Fatalf("DEVICE_BASIC_INFO: %v", e)
				}
			}
			served := sum(f.RingServed()) - before
			if expect == fs.TransportURing && served < 100 {
				t.Errorf("rings served %d of 100 ioctls", served)
			}
			if expect == fs.TransportClassic && served != 0 {
				t.Errorf("classic transport, yet rings served %d requests", served)
			}
		})
	}
}

// A failed io_uring setup falls back to the classic loop under auto, and
// fails the mount when io_uring was asked for.
func TestTransportFallback(t *testing.T) {
	testutil.RequireFUSE(t)
	if !uringAvailable(t) {
		t.Skip("no FUSE over io_uring here")
	}
	fs.FailURingQueue(0)
	defer fs.FailURingQueue(-1)
	f, dir := mountWith(t, fs.Options{Transport: fs.TransportAuto})
	if f.Transport() != fs.TransportClassic {
		t.Fatalf("transport %q after a failed queue, want classic", f.Transport())
	}
	fd := openDev(t, dir, 0, unix.O_RDWR)
	var info ioctl.DeviceBasicInfo
	if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &info); e != 0 {
		t.Fatalf("DEVICE_BASIC_INFO: %v", e)
	}
	unix.Close(fd)

	sys, err := device.NewSystem(device.Config{Instance: "trn2.3xlarge", Major: 244})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if f, err := fs.Mount(sys, t.TempDir(), fs.Options{Transport: fs.TransportURing}); err == nil {
		f.Unmount()
		t.Fatal("mount with transport uring succeeded despite a failed queue")
	}
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}
