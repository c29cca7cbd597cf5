// Package spacefs serves a device's physical address space as a file whose
// offsets are physical addresses, while the bytes live compactly in a
// sparse file of the backing directory.
//
// Clients map device memory at offset = physical address, and the chips'
// addresses reach past 128 TiB; ext4 (the default filesystem of most
// distributions) ends a file at 16 TiB. So on such a filesystem the
// physical space is a file of a small FUSE filesystem instead: every
// mapping of it, the daemon's and the clients' (through passthrough or a
// descriptor the supervisor installs), shares that file's page cache, so
// memory stays coherent at once, and the kernel writes cold pages back
// to this package's server, which keeps them in 2 MiB extents packed at
// the start of an unnamed file in the directory.
//
// The server runs in a child process of the daemon (the same binary,
// started again with an environment variable), for two reasons: a
// goroutine of the daemon that faults on a page of the space blocks its
// scheduler slot in the kernel, so a server inside the daemon could be
// starved of every slot; and a process that dies while its own FUSE
// server is gone can hang in the kernel closing its files. The child
// mounts in a mount namespace of its own, so no mount is ever visible to
// the host, and it exits when the daemon's end of a pipe closes, however
// the daemon died.
package spacefs
