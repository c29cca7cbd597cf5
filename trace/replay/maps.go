package replay

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// What a recorded mmap may ask of the replaying process, the trace being
// untrusted: a mapping of the device's memory, no more.

// maxMapLen bounds a replayed mapping's length. A device maps whole chunks
// and its special resources; a chunk lives in one HBM channel, and the
// largest channel any architecture has (dhal's HBMSize, 36 GiB on V4) is
// below this (TestMapCapCoversHBM). A longer mapping is skipped, not
// issued.
const maxMapLen = 64 << 30

// allowedProt is what a device mapping can be: readable, writable.
// PROT_EXEC and the grows flags are dropped.
const allowedProt = unix.PROT_READ | unix.PROT_WRITE

// mapArgs reduces a recorded mmap's protection and flags to what replay
// issues: the mapping type (MAP_SHARED or MAP_PRIVATE; MAP_SHARED_VALIDATE
// as MAP_SHARED, since no flag it would validate is passed) and nothing
// else. The recorded address is this process's to choose, so MAP_FIXED
// goes too; MAP_POPULATE, MAP_LOCKED, MAP_ANONYMOUS, MAP_HUGETLB and the
// rest are not the device's business. dropped lists what was not passed;
// why is not empty when the call must not be issued at all.
func mapArgs(length, prot, flags uint64) (p, f uint64, dropped []string, why string) {
	switch {
	case length == 0:
		// Issued: the kernel's EINVAL is compared with the recording.
	case length > maxMapLen:
		return 0, 0, nil, fmt.Sprintf("length %#x is over replay's cap of %#x", length, uint64(maxMapLen))
	}
	switch flags & unix.MAP_TYPE {
	case unix.MAP_SHARED, unix.MAP_SHARED_VALIDATE:
		f = unix.MAP_SHARED
	case unix.MAP_PRIVATE:
		f = unix.MAP_PRIVATE
	default:
		return 0, 0, nil, fmt.Sprintf("mapping type %#x is neither MAP_SHARED nor MAP_PRIVATE", flags&unix.MAP_TYPE)
	}
	// The address is rewritten (and noted so) anyway: MAP_FIXED is no news.
	if rest := flags &^ (unix.MAP_TYPE | unix.MAP_FIXED | unix.MAP_FIXED_NOREPLACE); rest != 0 {
		dropped = append(dropped, fmt.Sprintf("flags %#x", rest))
	}
	p = prot & allowedProt
	if rest := prot &^ allowedProt; rest != 0 {
		dropped = append(dropped, fmt.Sprintf("prot %#x", rest))
	}
	return p, f, dropped, ""
}

// pageAlign rounds a length up to pages, as the kernel maps it.
func pageAlign(n uint64) uint64 {
	page := uint64(unix.Getpagesize())
	return (n + page - 1) &^ (page - 1)
}
