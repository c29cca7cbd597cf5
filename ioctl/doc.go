// Package ioctl is the driver's ioctl ABI as data: every command's
// number, direction, size, lane and attach gate, every argument struct's
// layout, and what each member means, for each emulated driver version.
//
// # What lives here
//
//   - abi/: the facts, as tables read from the public driver's headers
//     (abi-ioctls.tsv, abi-structs.tsv, abi-roles.tsv for 2.25.4.0, and
//     versions/<v>/ for what each other version adds, removes or changes).
//   - abi_*_gen.go: what `go generate ./ioctl` makes of those tables
//     (internal/abigen): the command constants, the Go structs with
//     explicit padding, and the member roles. Never edit them by hand.
//   - table.go, versions.go: a Table per driver version (Lookup by
//     command number, ByName, ByNr), with the version's quirks.
//   - ioc.go, layout.go: the _IOC encoding and struct layouts that
//     dispatch, the trace decoder and replay walk.
//   - errno.go: the driver's errno conventions (results that are not
//     errors, the kernel-internal numbers a caller never sees).
//
// # How a command travels
//
// A transport (package fs: FUSE or the seccomp supervisor) hands the raw
// command number to device.System.Ioctl, which looks it up in the
// version's Table, checks its lane and attach gate, and calls the handler
// device registers for its Macro. Nothing outside this package decodes a
// command number by hand.
//
// # Adding a command
//
// Add its row to abi/abi-ioctls.tsv (and its struct to abi-structs.tsv,
// its members' roles to abi-roles.tsv), or to the version delta that
// introduces it; run `go generate ./ioctl ./device`; then give its Macro
// one row in device/commands.go, whose guide says how: the handler,
// whether it waits, its budget and whether a transport may serve it
// inline, in one declaration that dispatch, the watchdog and the
// transports all read. abi_parity_test.go checks the tables against the
// generated code, device's table-consistency test that every command has
// its row, and the generated command pages (docs/commands/) name a command
// without a handler as not emulated.
package ioctl
