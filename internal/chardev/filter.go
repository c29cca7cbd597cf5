// Package chardev makes /dev/neuronN look like the character devices they
// are on a real host, inside `neuronfs run`: the nodes are real character
// nodes (whose open would fail, no kernel driver owns their major), and a
// seccomp user-notification filter hands every open of them to the daemon,
// which opens the FUSE node for the caller and installs the descriptor in
// it; fstat of such a descriptor reports the character node. Where mknod
// of a device is not allowed (a user namespace), a node may be a stand-in
// of another device number (ns.StandIn), known by its inode.
//
// The filter decides as much as it can from the syscall arguments alone
// (docs/chardev.md): device descriptors are
// installed at numbers from FDBase up, so that fstat, empty-path
// newfstatat/statx, mmap and dup of any lower descriptor never leave the
// kernel; only opens (whose path BPF cannot read), calls on descriptors
// from FDBase up, and growing mremaps reach the supervisor.
//
// run's filter host view (Config.Paths, PathView) has no node, sysfs
// directory or FUSE mount at all: its filter (pathFilter) also sends
// every call that takes a path, and the supervisor answers those of the
// emulated paths from a shadow tree (viewpath.go, viewanswer.go).
package chardev

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FDBase is the lowest descriptor number a device descriptor gets under
// run. It sits below the usual soft RLIMIT_NOFILE of 1024 (a descriptor
// must be below the limit) and below FD_SETSIZE, and leaves 512 slots;
// a program's own descriptors from FDBase up still work, their fstat and
// mmap just take the slow path through the supervisor.
const FDBase = 512

// BPF opcodes (classic BPF, as seccomp takes it).
const (
	bpfLdW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJgtX = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_X
	bpfJeqX = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X
	bpfJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfJa   = unix.BPF_JMP | unix.BPF_JA
	bpfAnd  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfTax  = unix.BPF_MISC | unix.BPF_TAX
	bpfRet  = unix.BPF_RET | unix.BPF_K

	// x32SyscallBit marks a call of the x32 ABI, whose numbers on
	// x86_64's own arch mean other calls than the filter compares with
	// (sysArch.x32).
	x32SyscallBit = 0x40000000

	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// asm builds a classic BPF program with forward jumps to named labels
// (classic BPF only jumps forward), resolved by prog.
type asm struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string // "" for the next instruction
	ja     bool
}

func (a *asm) label(name string) { a.labels[name] = len(a.ins) }

func (a *asm) stmt(code uint16, k uint32) { a.ins = append(a.ins, unix.SockFilter{Code: code, K: k}) }

// jump adds a conditional jump to jt if true, jf if false.
func (a *asm) jump(code uint16, k uint32, jt, jf string) {
	a.fixups = append(a.fixups, fixup{at: len(a.ins), jt: jt, jf: jf})
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

// goTo adds an unconditional jump.
func (a *asm) goTo(l string) {
	a.fixups = append(a.fixups, fixup{at: len(a.ins), jt: l, ja: true})
	a.ins = append(a.ins, unix.SockFilter{Code: bpfJa})
}

func (a *asm) prog() []unix.SockFilter {
	off := func(from int, l string) int {
		if l == "" {
			return 0
		}
		to, ok := a.labels[l]
		if !ok || to <= from {
			panic("chardev: bad BPF label " + l)
		}
		return to - from - 1
	}
	for _, f := range a.fixups {
		if f.ja {
			a.ins[f.at].K = uint32(off(f.at, f.jt))
			continue
		}
		jt, jf := off(f.at, f.jt), off(f.at, f.jf)
		if jt > 255 || jf > 255 {
			panic("chardev: BPF jump too long")
		}
		a.ins[f.at].Jt, a.ins[f.at].Jf = uint8(jt), uint8(jf)
	}
	return a.ins
}

// argLow and argHigh are the offsets of the halves of syscall argument i
// (little-endian).
func argLow(i int) uint32  { return uint32(offArgs + 8*i) }
func argHigh(i int) uint32 { return uint32(offArgs + 8*i + 4) }

// filter notifies the listener of exactly the calls that can concern a
// device, and allows everything else in the kernel:
//   - open, openat and openat2, except those with O_PATH (which never
//     reach a driver), O_DIRECTORY (a character node fails them with
//     ENOTDIR in the kernel already; O_TMPFILE includes it) or
//     O_CREAT|O_EXCL (EEXIST on any existing node); openat2's flags are
//     behind a pointer, so every openat2 is notified;
//   - fstat, dup, and newfstatat/statx with AT_EMPTY_PATH, of a
//     descriptor from FDBase up;
//   - mmap of a descriptor from FDBase up (not MAP_ANONYMOUS);
//   - dup2/dup3 from a descriptor from FDBase up onto one below it, and
//     fcntl(F_DUPFD, F_DUPFD_CLOEXEC) of one from FDBase up with a
//     minimum below it: the copy would land outside the range;
//   - mremap that grows a mapping (new length above old), wherever it is:
//     the filter cannot tell device mappings by their address.
//
// With direct set (device descriptors are not FUSE files, see
// Config.Direct), also:
//   - ioctl and close of a descriptor from FDBase up, and an ioctl whose
//     type byte is ioctlType (the driver's, ioctl.Magic) on any descriptor;
//   - close_range whose range reaches FDBase (without CLOSE_RANGE_CLOEXEC
//     it closes those);
//   - dup2/dup3 onto a descriptor from FDBase up, which it closes first;
//   - fcntl lock commands (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW)
//     of any descriptor, and ftruncate, fallocate and truncate whatever
//     the descriptor or path: each can crash the daemon or tell it an
//     open is gone, and a copy of a device descriptor can sit below
//     FDBase (SCM_RIGHTS); they are rare enough to pay a round trip;
//   - execve and execveat, which close descriptors unseen;
//   - the other refusals (refuse.go) with a descriptor argument from
//     FDBase up;
//
// With paths (pathFilter, the filter host view), also every call of
// pathCalls whatever its flags, but an open with O_CREAT|O_EXCL, and a
// newfstatat or statx without AT_EMPTY_PATH.
//
// The numbers are the running architecture's (hostArch: x86_64 or
// arm64). The direct filters fail every call of another ABI with ENOSYS:
// a 32-bit call (int $0x80, AUDIT_ARCH_I386; arm64's AArch32 compat) or
// an x32 one has numbers the filter does not know, so it would reach a
// device descriptor's file unseen.
//
// Descriptors are ints: the kernel reads the low 32 bits, and negative
// ones (EBADF, or AT_FDCWD) are not in the range.
func filter(direct bool, ioctlType uint32) []unix.SockFilter {
	return buildFilter(filterMode{arch: hostArch, direct: direct, ioctlType: ioctlType})
}

// pathFilter is the filter of the filter host view (Config.Paths): the
// direct filter that also sends every call that takes a path
// (pathCalls), and opens whatever their flags but O_CREAT|O_EXCL, since
// BPF cannot read the path and the view's directories and links exist
// nowhere on disk.
func pathFilter(ioctlType uint32) []unix.SockFilter {
	return buildFilter(filterMode{arch: hostArch, direct: true, paths: true, ioctlType: ioctlType})
}

// filterMode is what a filter sends beyond the FUSE descriptors' calls,
// for which architecture.
type filterMode struct {
	arch          *sysArch
	direct, paths bool
	ioctlType     uint32
}

// on adds a jump to label if the syscall number is call c's; nothing
// where the architecture lacks c.
func (m filterMode) on(a *asm, c sysCall, label string) {
	if nr, ok := m.arch.nr(c); ok {
		a.jump(bpfJeq, uint32(nr), label, "")
	}
}

func buildFilter(m filterMode) []unix.SockFilter {
	a := &asm{labels: map[string]int{}}
	dispatch(a, m)
	openChecks(a, m)
	fdChecks(a, m)
	if m.direct {
		directChecks(a, m)
	}
	a.label("mremap")
	// Notify if new length (arg 2) > old length (arg 1), as 64-bit
	// numbers: high halves first, then low halves.
	a.stmt(bpfLdW, argHigh(1))
	a.stmt(bpfTax, 0)
	a.stmt(bpfLdW, argHigh(2))
	a.jump(bpfJgtX, 0, "notify", "")
	a.jump(bpfJeqX, 0, "", "allow")
	a.stmt(bpfLdW, argLow(1))
	a.stmt(bpfTax, 0)
	a.stmt(bpfLdW, argLow(2))
	a.jump(bpfJgtX, 0, "notify", "allow")

	// fd0: notify if argument 0 is a descriptor in the device range.
	a.label("fd0")
	a.stmt(bpfLdW, argLow(0))
	a.label("inrange")
	a.jump(bpfJset, 0x80000000, "allow", "")
	a.jump(bpfJge, FDBase, "notify", "allow")

	if m.direct {
		a.label("enosys")
		a.stmt(bpfRet, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	}
	a.label("notify")
	a.stmt(bpfRet, unix.SECCOMP_RET_USER_NOTIF)
	a.label("allow")
	a.stmt(bpfRet, unix.SECCOMP_RET_ALLOW)
	return a.prog()
}

// dispatch checks the ABI and jumps by syscall number.
func dispatch(a *asm, m filterMode) {
	a.stmt(bpfLdW, offArch)
	if m.direct {
		a.jump(bpfJeq, m.arch.audit, "", "enosys")
	} else {
		// A FUSE descriptor's every call reaches the daemon as FUSE
		// requests, whatever ABI made it.
		a.jump(bpfJeq, m.arch.audit, "", "allow")
	}
	a.stmt(bpfLdW, offNr)
	if m.direct && m.arch.x32 {
		a.jump(bpfJset, x32SyscallBit, "enosys", "")
	}
	for _, j := range commonJumps {
		m.on(a, j.call, j.label)
	}
	if m.paths {
		for _, c := range pathCalls {
			if c.viaDispatch {
				m.on(a, c.call, "notify")
			}
		}
	}
	if m.direct {
		for _, j := range directJumps {
			m.on(a, j.call, j.label)
		}
		for _, r := range refusals {
			if r.anyFD {
				m.on(a, r.call, "notify")
				continue
			}
			m.on(a, r.call, refusalLabel(r.call))
		}
	}
	a.goTo("allow")
}

// jumpTo sends a call to the checks at label.
type jumpTo struct {
	call  sysCall
	label string
}

// commonJumps are where every filter sends a call; directJumps where the
// direct filters send the calls of direct descriptors.
var (
	commonJumps = []jumpTo{
		{sysOpen, "open"}, {sysOpenat, "openat"}, {sysOpenat2, "notify"},
		{sysFstat, "fd0"}, {sysDup, "fd0"}, {sysNewfstatat, "newfstatat"},
		{sysStatx, "statx"}, {sysMmap, "mmap"}, {sysMremap, "mremap"},
		{sysDup2, "dup2"}, {sysDup3, "dup2"}, {sysFcntl, "fcntl"},
	}
	directJumps = []jumpTo{
		{sysIoctl, "ioctl"}, {sysClose, "fd0"}, {sysCloseRange, "closerange"},
		{sysExecve, "notify"}, {sysExecveat, "notify"}, {sysTruncate, "notify"},
	}
)

// openChecks decides opens by their flags, and the stat calls by
// AT_EMPTY_PATH.
func openChecks(a *asm, m filterMode) {
	a.label("open")
	a.stmt(bpfLdW, argLow(1))
	a.goTo("openflags")
	a.label("openat")
	a.stmt(bpfLdW, argLow(2))
	a.label("openflags")
	if !m.paths {
		a.jump(bpfJset, unix.O_PATH|m.arch.oDirectory, "allow", "")
	}
	a.stmt(bpfAnd, unix.O_CREAT|unix.O_EXCL)
	a.jump(bpfJeq, unix.O_CREAT|unix.O_EXCL, "allow", "notify")

	// Without AT_EMPTY_PATH the call names a path: the filter host view
	// must see it.
	other := "allow"
	if m.paths {
		other = "notify"
	}
	a.label("newfstatat")
	a.stmt(bpfLdW, argLow(3))
	a.jump(bpfJset, unix.AT_EMPTY_PATH, "fd0", other)
	a.label("statx")
	a.stmt(bpfLdW, argLow(2))
	a.jump(bpfJset, unix.AT_EMPTY_PATH, "fd0", other)
}

// fdChecks sends the calls on descriptors from FDBase up that every
// filter sends.
func fdChecks(a *asm, m filterMode) {
	a.label("mmap")
	a.stmt(bpfLdW, argLow(3))
	a.jump(bpfJset, unix.MAP_ANONYMOUS, "allow", "")
	a.stmt(bpfLdW, argLow(4))
	a.goTo("inrange")

	a.label("dup2")
	a.stmt(bpfLdW, argLow(1))
	a.jump(bpfJset, 0x80000000, "allow", "")
	if m.direct {
		a.jump(bpfJge, FDBase, "notify", "fd0")
		// close_range's bounds are unsigned.
		a.label("closerange")
		a.stmt(bpfLdW, argLow(1))
		a.jump(bpfJge, FDBase, "notify", "allow")
	} else {
		a.jump(bpfJge, FDBase, "allow", "fd0")
	}
	a.label("fcntl")
	a.stmt(bpfLdW, argLow(1))
	if m.direct {
		a.jump(bpfJeq, unix.F_OFD_SETLK, "notify", "")
		a.jump(bpfJeq, unix.F_OFD_SETLKW, "notify", "")
		a.jump(bpfJeq, unix.F_SETLK, "notify", "")
		a.jump(bpfJeq, unix.F_SETLKW, "notify", "")
	}
	a.jump(bpfJeq, unix.F_DUPFD, "fcntlmin", "")
	a.jump(bpfJeq, unix.F_DUPFD_CLOEXEC, "fcntlmin", "allow")
	a.label("fcntlmin")
	a.stmt(bpfLdW, argLow(2))
	a.jump(bpfJge, FDBase, "allow", "fd0")
}

// directChecks sends the ioctls and the refusals of direct descriptors.
func directChecks(a *asm, m filterMode) {
	// Any descriptor from FDBase up, and a Neuron command on any
	// descriptor: a copy of a device descriptor below FDBase (dup2 onto
	// a low number, or no number free from FDBase up) must still reach
	// the driver.
	a.label("ioctl")
	a.stmt(bpfLdW, argLow(0))
	a.jump(bpfJset, 0x80000000, "ioctltype", "")
	a.jump(bpfJge, FDBase, "notify", "")
	a.label("ioctltype")
	a.stmt(bpfLdW, argLow(1))
	a.stmt(bpfAnd, 0xff00)
	a.jump(bpfJeq, m.ioctlType<<8, "notify", "allow")

	// A refusal: notify if any of its descriptor arguments is in the
	// range.
	for _, r := range refusals {
		if r.anyFD {
			continue
		}
		a.label(refusalLabel(r.call))
		for k, i := range r.fdArgs {
			next := "allow"
			if k < len(r.fdArgs)-1 {
				next = fmt.Sprintf("%s.%d", refusalLabel(r.call), k+1)
			}
			if k > 0 {
				a.label(fmt.Sprintf("%s.%d", refusalLabel(r.call), k))
			}
			a.stmt(bpfLdW, argLow(i))
			a.jump(bpfJset, 0x80000000, next, "")
			a.jump(bpfJge, FDBase, "notify", next)
		}
	}
}

func refusalLabel(c sysCall) string { return fmt.Sprintf("refuse%d", c) }

// InstallFilter installs the filter on the calling thread (which must stay
// locked to its goroutine until it execs) and returns the listener fd.
// The caller must have CAP_SYS_ADMIN or no_new_privs set. direct also
// sends the calls Config.Direct serves; the task then waits for an
// answer the supervisor has received as the driver's ioctls wait, for a
// fatal signal only (Linux ≥ 5.19): an ordinary signal would withdraw
// the call and restart it, and the driver would run it twice. killable
// is false when the kernel lacks that wait.
func InstallFilter(direct bool, ioctlType uint32) (listener int, killable bool, err error) {
	if hostArch == nil {
		return -1, false, errNoArch
	}
	return installProg(filter(direct, ioctlType), direct)
}

// InstallViewFilter is InstallFilter for the filter host view
// (pathFilter, Config.Paths): the direct filter that also sends the
// path calls.
func InstallViewFilter(ioctlType uint32) (listener int, killable bool, err error) {
	if hostArch == nil {
		return -1, false, errNoArch
	}
	return installProg(pathFilter(ioctlType), true)
}

// errNoArch: the filters know no other architecture's numbers.
var errNoArch = fmt.Errorf("seccomp: the filters serve amd64 and arm64, not %s", runtime.GOARCH)

func installProg(prog []unix.SockFilter, direct bool) (listener int, killable bool, err error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if direct {
		fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&fprog)))
		if errno == 0 {
			return int(fd), true, nil
		}
		if errno != unix.EINVAL {
			return -1, false, fmt.Errorf("seccomp: %w", errno)
		}
	}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, false, fmt.Errorf("seccomp: %w", errno)
	}
	return int(fd), !direct, nil
}
