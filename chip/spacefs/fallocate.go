package spacefs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Allocating a range of a memory file, which signals must not fail.
//
// On tmpfs (a memfd, or a backing directory on tmpfs) kernels before the
// 2024 change "tmpfs: don't interrupt fallocate with EINTR" (6.1 has it
// not, 6.18 has it) end fallocate with EINTR whenever the caller has any
// signal pending, not only a fatal one, undoing what that call had
// allocated; a Go daemon's threads get signals all the time (the
// runtime's preemption, SIGCHLD). SA_RESTART does not help: the call
// returns EINTR, not a restart code. Measured in the 6.1 guest of
// scripts/vmtest.sh with a signal to the calling thread every 50 us:
// one 8 KiB fallocate in 300 failed, half the 1 MiB ones, every 64 MiB
// one; on 6.18 none.

// allocPiece is the most one fallocate asks for: small enough that a
// piece a signal interrupted costs little to redo, and that progress is
// kept in pieces the file already holds.
const allocPiece = 1 << 20

// allocRetries bounds the consecutive interrupted calls on a single page
// before giving up: a page's fallocate is too short for a signal storm to
// hit every time unless something is wrong.
const allocRetries = 1000

type fallocateFunc func(fd int, mode uint32, off, n int64) error

// Allocate makes fd hold [off, off+n) (fallocate with KEEP_SIZE), in
// pieces, redoing a piece a signal interrupted: halved each time down to
// a page, so a piece's window for a signal shrinks with it, and doubled
// again after each success.
func Allocate(fd int, off, n int64) error {
	return allocate(unix.Fallocate, fd, off, n)
}

func allocate(fallocate fallocateFunc, fd int, off, n int64) error {
	const page = 4096
	piece, tries := int64(allocPiece), 0
	for n > 0 {
		l := min(n, piece)
		err := fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, off, l)
		switch {
		case err == nil:
			off, n, tries = off+l, n-l, 0
			piece = min(piece*2, allocPiece)
		case err != unix.EINTR:
			return fmt.Errorf("fallocate %#x+%#x: %w", off, l, err)
		case piece > page:
			piece /= 2
		default:
			if tries++; tries >= allocRetries {
				return fmt.Errorf("fallocate %#x+%#x: interrupted %d times: %w", off, l, tries, err)
			}
		}
	}
	return nil
}

// Punch returns [off, off+n) of fd to the filesystem (it reads back as
// zeros), redoing a call a signal interrupted (no filesystem is known to
// do that to a punch; the call's contract allows it).
func Punch(fd int, off, n int64) error {
	return punch(unix.Fallocate, fd, off, n)
}

func punch(fallocate fallocateFunc, fd int, off, n int64) error {
	for tries := 0; ; tries++ {
		err := fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err == nil {
			return nil
		}
		if err != unix.EINTR || tries+1 >= allocRetries {
			return fmt.Errorf("punch %#x+%#x: %w", off, n, err)
		}
	}
}
