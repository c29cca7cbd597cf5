package main

import (
	"github.com/neuronfs/neuronfs/device"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/internal/testenv"
)

// reachable follows the mode bits of every directory on the way, as the
// kernel does for a caller without capabilities.
func TestReexecReachable(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	bin := filepath.Join(dir, "neuronfs")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	owner := int(st.Sys().(*syscall.Stat_t).Uid)
	for _, c := range []struct {
		mode os.FileMode
		uid  int
		want bool
	}{
		{0o700, owner, true},
		{0o700, nobody, false},
		{0o711, nobody, true},
		{0o750, nobody, false},
	} {
		os.Chmod(dir, c.mode)
		if got := reachable(bin, c.uid, []int{nobody}); got != c.want {
			t.Errorf("dir %04o, uid %d: reachable %v, want %v", c.mode, c.uid, got, c.want)
		}
	}
}

// A binary started as nobody through setpriv (which executes it before
// the path is checked for nobody) from a directory only root can enter:
// the daemon's re-execution is refused, and run says so in one line
// naming the binary and the errno, not a user namespace.
func TestReexecUnreachableBinary(t *testing.T) {
	testRequireRoot(t)
	testenv.RequireFUSE(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatal("NEURONFS_REQUIRE_FUSE=1 but setpriv (util-linux) is missing")
		}
		t.Skip("needs setpriv (util-linux)")
	}
	if err := readUsernsFacts().beforeClone(); err != nil {
		t.Skip(err)
	}
	bin := binaryCopy(t, "neuronfs")
	os.Chmod(filepath.Dir(bin), 0o700)
	// /dev/fuse usable by nobody in a private mount namespace, as
	// asNobody makes it; then nobody runs the binary.
	script := `mount -t tmpfs tmpfs "$1" && mknod -m 666 "$1/fuse" c 10 229 && mount --bind "$1/fuse" /dev/fuse &&
exec "$2" --reuid 65534 --regid 65534 --clear-groups "$3" run -- true`
	cmd := exec.Command("sh", "-c", script, "sh", t.TempDir(), setpriv, bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	// Not the suite's memory backing: its directory is root's.
	t.Setenv(device.BackingEnv, "")
	_, stderr, status := cliCmd(t, cmd)
	if strings.Contains(stderr, "exec") && strings.Contains(stderr, "setpriv") {
		t.Skipf("this setpriv checks the path as nobody: %q", stderr)
	}
	want := "neuronfs run: cannot re-execute " + bin + " as uid 65534: permission denied (EACCES); copy the binary somewhere that user can read\n"
	if status != 1 || stderr != want {
		t.Fatalf("status %d, stderr %q; want 1 and %q", status, stderr, want)
	}
}
