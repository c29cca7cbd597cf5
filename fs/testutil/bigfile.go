package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BigFileDirEnv names a directory on a filesystem whose files may reach
// the chips' highest physical addresses (XFS, btrfs, tmpfs; not ext4,
// whose files end at 16 TiB): what file-backed device memory needs.
const BigFileDirEnv = "NEURONFS_BIGFILE_DIR"

// bigFileSpan is past every architecture's physical span.
const bigFileSpan = 1 << 48

// BigFileDir returns a directory for file-backed device memory: $NEURONFS_BIGFILE_DIR,
// the test's temporary directory if its filesystem can hold such a file,
// or else a fresh XFS filesystem on a loop device made for the test
// (root and mkfs.xfs; without them the test skips, or fails under
// NEURONFS_REQUIRE_FUSE=1). imageSize is that filesystem's size.
func BigFileDir(t testing.TB, imageSize int64) string {
	t.Helper()
	if dir := os.Getenv(BigFileDirEnv); dir != "" {
		return dir
	}
	dir := t.TempDir()
	if holdsBigFile(dir) {
		return dir
	}
	RequireFUSE(t) // root
	mkfs, err := exec.LookPath("mkfs.xfs")
	if err != nil {
		if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("%s cannot hold a %#x-byte file and there is no mkfs.xfs (xfsprogs) to make a filesystem that can", dir, bigFileSpan)
		}
		t.Skipf("%s cannot hold a %#x-byte file; needs xfsprogs", dir, bigFileSpan)
	}
	img := filepath.Join(dir, "xfs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, imageSize); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-f", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v\n%s", err, out)
	}
	mnt := filepath.Join(dir, "xfs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mounting an XFS image: %v\n%s", err, out)
	}
	// Its loop device goes with the last unmount (mount sets autoclear).
	GuardMount(t, mnt)
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// holdsBigFile reports whether dir's filesystem takes a file of
// bigFileSpan bytes.
func holdsBigFile(dir string) bool {
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return f.Truncate(bigFileSpan) == nil
}
