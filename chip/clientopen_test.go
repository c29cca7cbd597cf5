package chip

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A client's open of the physical memory cannot change its size, with
// either backing: a shrink would kill the daemon with SIGBUS at its next
// access past the new end. The daemon still punches and reserves, and
// its memory reads back what was written.
func TestClientOpenCannotResize(t *testing.T) {
	for _, backing := range []string{"memfd", "file"} {
		t.Run(backing, func(t *testing.T) {
			c, _ := newTestChipWith(t, "trn1.2xlarge", func(cfg *Config) {
				if backing == "file" {
					cfg.Backing = Backing{Dir: shmDir(t)}
				}
			})
			span := int64(c.phys.span)
			view, err := c.PhysView(0, 8192)
			if err != nil {
				t.Fatal(err)
			}
			want := bytes.Repeat([]byte{0xa5}, 8192)
			copy(view, want)

			fd, restricted, err := c.OpenForClient(unix.O_RDWR)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if !restricted {
				t.Skip("no Landlock truncate right on this kernel (Linux < 6.2 or Landlock off): a file backing's open can be truncated")
			}
			if err := unix.Ftruncate(fd, 4096); err == nil {
				t.Errorf("a client's ftruncate to 4096 succeeded")
			}
			if err := unix.Ftruncate(fd, span+4096); err == nil {
				t.Errorf("a client's ftruncate past the span succeeded")
			}
			if backing == "memfd" {
				if err := unix.Fallocate(fd, 0, span, 4096); err == nil {
					t.Errorf("a client's fallocate past the span succeeded")
				}
				if _, err := unix.Pwrite(fd, []byte{1}, span); err == nil {
					t.Errorf("a client's write past the span succeeded")
				}
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); err == nil {
					t.Errorf("a client added F_SEAL_FUTURE_WRITE")
				}
			}
			var st unix.Stat_t
			if err := unix.Fstat(c.phys.fd, &st); err != nil {
				t.Fatal(err)
			}
			if st.Size != span {
				t.Fatalf("physical memory is %#x bytes after the client's calls, want %#x", st.Size, span)
			}
			// The daemon's own calls still work, and its memory is intact
			// (a read past a shrunken end would be SIGBUS, not a mismatch).
			if !bytes.Equal(view, want) {
				t.Errorf("memory changed under the daemon")
			}
			c.Punch(4096, 4096)
			if view[4096] != 0 || view[0] != 0xa5 {
				t.Errorf("after punching the second page: %#x %#x, want 0xa5 0", view[0], view[4096])
			}
			if err := c.Reserve(4096, 4096); err != nil {
				t.Errorf("the daemon's reservation: %v", err)
			}
		})
	}
}

// shmDir is a fresh directory on tmpfs, whose files may be as long as a
// physical space (ext4's end before; a compact store would need FUSE).
func shmDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "neuronfs-chip-")
	if err != nil {
		t.Skipf("no tmpfs at /dev/shm for a file backing: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
