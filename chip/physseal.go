package chip

import "golang.org/x/sys/unix"

// sealSize fixes the size of a memfd for good. Every mapper of the
// physical memory, the daemon first, faults with SIGBUS on a page past
// the end of the file, and clients hold opens of this very file (direct
// descriptors, passthrough): no open may shrink or grow it, whoever
// holds it and whatever call it makes (ftruncate, fallocate past the
// end, a write past the end, io_uring). Punching a hole keeps the size
// and stays allowed (the daemon frees memory that way). F_SEAL_SEAL
// stops a client from adding F_SEAL_FUTURE_WRITE, which would fail
// every later write and shared mapping of the device's memory.
func sealSize(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
	return err
}
