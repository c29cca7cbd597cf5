package fs_test

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// Symlinks, attributes and power/ files stat and answer as sysfs's do:
// links lrwxrwxrwx with one link and the mount's time, attributes 4096
// bytes whatever their content.
func TestSysfsStatLikeSysfs(t *testing.T) {
	before := time.Now().Add(-time.Second)
	dir, _ := testutil.Mount(t, "trn2.3xlarge")
	after := time.Now().Add(time.Second)
	stamped := func(name string, st *unix.Stat_t) {
		t.Helper()
		mt := time.Unix(st.Mtim.Unix())
		if mt.Before(before) || mt.After(after) {
			t.Errorf("%s: mtime %v, want the mount time (%v..%v)", name, mt, before, after)
		}
	}
	for _, l := range []string{
		"sys/class/neuron_device/neuron0",
		"sys/devices/virtual/neuron_device/neuron0/subsystem",
	} {
		var st unix.Stat_t
		if err := unix.Lstat(dir+"/"+l, &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode != unix.S_IFLNK|0o777 || st.Nlink != 1 || st.Size != 0 || st.Blocks != 0 {
			t.Errorf("%s: mode %o nlink %d size %d blocks %d, want %o, 1, 0, 0", l, st.Mode, st.Nlink, st.Size, st.Blocks, unix.S_IFLNK|0o777)
		}
		stamped(l, &st)
	}
	for _, a := range []string{
		"sys/devices/virtual/neuron_device/neuron0/dev",
		"sys/devices/virtual/dmi/id/product_name",
		"sys/devices/virtual/neuron_device/neuron0/power/runtime_status",
	} {
		var st unix.Stat_t
		if err := unix.Stat(dir+"/"+a, &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != 4096 || st.Nlink != 1 || st.Blocks != 0 {
			t.Errorf("%s: size %d nlink %d blocks %d, want 4096, 1, 0", a, st.Size, st.Nlink, st.Blocks)
		}
		stamped(a, &st)
	}
	if b, err := os.ReadFile(dir + "/sys/devices/virtual/dmi/id/product_name"); err != nil || string(b) != "trn2.3xlarge\n" {
		t.Errorf("product_name %q (%v)", b, err)
	}
	power := dir + "/sys/devices/virtual/neuron_device/neuron0/power/"
	if err := os.WriteFile(power+"control", []byte("on\n"), 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(power + "control"); string(b) != "on\n" {
		t.Errorf("control after writing on: %q", b)
	}
	if err := os.WriteFile(power+"control", []byte("off"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("writing off to control: %v, want EINVAL", err)
	}
	if err := os.WriteFile(power+"autosuspend_delay_ms", []byte("100"), 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("writing autosuspend_delay_ms: %v, want EIO", err)
	}
}
