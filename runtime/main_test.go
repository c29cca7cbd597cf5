package runtime_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/exitguard"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// exampleRoot is where the examples find the driver's dev/ and sys/:
// NEURONFS_EXAMPLE_ROOT if set ("/" inside 'neuronfs run'), else an
// emulated trn2.3xlarge that TestMain mounts for them.
var exampleRoot string

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	flag.Parse()
	testutil.StartGuard()
	unmount, err := mountExampleHost()
	if err != nil {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			fmt.Fprintln(os.Stderr, "NEURONFS_REQUIRE_FUSE=1 but the examples have no host:", err)
			os.Exit(1)
		}
		// Without FUSE the examples cannot run; the tests skip by themselves.
		fmt.Fprintln(os.Stderr, "skipping the examples:", err)
		flag.Set("test.skip", "^Example")
	}
	code := m.Run()
	unmount()
	os.Exit(code)
}

// mountExampleHost provides the examples' host and returns how to take
// it down.
func mountExampleHost() (func(), error) {
	if root := os.Getenv("NEURONFS_EXAMPLE_ROOT"); root != "" {
		exampleRoot = root
		return func() {}, nil
	}
	if os.Geteuid() != 0 {
		return func() {}, fmt.Errorf("needs root")
	}
	if err := unix.Access("/dev/fuse", unix.R_OK|unix.W_OK); err != nil {
		return func() {}, fmt.Errorf("needs /dev/fuse: %w", err)
	}
	sys, err := device.NewSystem(device.Config{Instance: "trn2.3xlarge", Major: 244})
	if err != nil {
		return func() {}, err
	}
	dir, err := os.MkdirTemp("", "neuronfs-examples-")
	if err != nil {
		sys.Close()
		return func() {}, err
	}
	f, err := fs.Mount(sys, dir, fs.Options{})
	if err != nil {
		sys.Close()
		os.Remove(dir)
		return func() {}, err
	}
	exampleRoot = dir
	// A binary that dies in the examples leaves the mount to its guard.
	var guarded exitguard.Reg
	if g, err := exitguard.Shared(); err == nil {
		guarded, _ = g.Mount(dir)
	}
	return func() {
		if err := f.Unmount(); err != nil {
			fmt.Fprintln(os.Stderr, "unmount the examples' host:", err)
		}
		guarded.Release()
		sys.Close()
		os.Remove(dir)
	}, nil
}
