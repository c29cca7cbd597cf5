package chip

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OpenForClient opens the chip's physical memory anew (an open file
// description of its own) with flags, for a client to hold as its device
// descriptor (fs.Direct). The client can map it, but must not resize it:
// the daemon and every other mapper would fault with SIGBUS past the new
// end. A memfd's size is sealed (sealSize). A file of a backing directory
// cannot be sealed, so it is opened from a thread that Landlock denies
// truncation: the denial belongs to the open file description, so every
// holder's ftruncate of it fails with EACCES, whichever process or
// io_uring makes the call. restricted is false where Landlock cannot
// deny it (Linux < 6.2, Landlock off, or its calls refused): the open
// then is an ordinary one.
func (c *Chip) OpenForClient(flags int) (fd int, restricted bool, err error) {
	path := fmt.Sprintf("/proc/self/fd/%d", c.phys.fd)
	if c.cfg.Backing.Dir == "" {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, false, fmt.Errorf("reopen %s memory: %w", c.cfg.Name, err)
		}
		return fd, true, nil
	}
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread keeps its Landlock domain until it exits: the
		// goroutine ends locked to it, so the runtime ends the thread
		// instead of running other goroutines on it.
		goruntime.LockOSThread()
		if err := denyTruncate(); err != nil {
			done <- result{-1, err}
			return
		}
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		done <- result{fd, err}
	}()
	r := <-done
	if errors.As(r.err, new(landlockError)) {
		// Without Landlock the open is an ordinary one: the device
		// still opens, and the supervisor's refusals are what is left.
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, false, fmt.Errorf("reopen %s memory: %w", c.cfg.Name, err)
		}
		return fd, false, nil
	}
	if r.err != nil {
		return -1, false, fmt.Errorf("reopen %s memory without truncation: %w", c.cfg.Name, r.err)
	}
	return r.fd, true, nil
}

// landlockError is why a thread could not be denied truncation.
type landlockError struct{ err error }

func (e landlockError) Error() string { return "Landlock: " + e.err.Error() }
func (e landlockError) Unwrap() error { return e.err }

var errNoLandlockTruncate = errors.New("no truncate right (Linux < 6.2, or Landlock off)")

// denyTruncate puts the calling thread in a Landlock domain that handles
// only the truncate right and grants it nowhere.
func denyTruncate() error {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 || int(abi) < 3 { // the truncate right came with ABI 3
		return landlockError{errNoLandlockTruncate}
	}
	// handled_access_fs alone: the kernel takes the first fields of
	// struct landlock_ruleset_attr it knows.
	attr := uint64(unix.LANDLOCK_ACCESS_FS_TRUNCATE)
	rs, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return landlockError{fmt.Errorf("landlock_create_ruleset: %w", e)}
	}
	defer unix.Close(int(rs))
	// Without CAP_SYS_ADMIN a domain needs no_new_privs, which, like the
	// domain, is this thread's alone.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return landlockError{fmt.Errorf("no_new_privs: %w", err)}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rs, 0, 0); e != 0 {
		return landlockError{fmt.Errorf("landlock_restrict_self: %w", e)}
	}
	return nil
}
