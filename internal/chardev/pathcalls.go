package chardev

// pathCall is a system call that takes a path, as the filter host view
// (Config.Paths) serves it: its numbers on x86_64 and arm64 (-1 where
// the architecture lacks it; the filter serves x86_64 only, arm64 is
// listed for docs/mount-run.md and a later filter), which arguments are
// the directory descriptor (-1: AT_FDCWD), the path and the flags (-1:
// none).
type pathCall struct {
	name         string
	x8664, arm64 int
	dirfd, path  int
	flags        int
	kind         pathKind
	// viaDispatch: the filter sends every such call (the others are
	// decided on their flags first).
	viaDispatch bool
}

// pathKind is how the supervisor answers a path call of the view.
type pathKind int

const (
	pathOpen pathKind = iota
	pathStat
	pathLstat
	pathStatx
	pathAccess
	pathReadlink
	// pathXattr: getxattr and listxattr (ls -l asks for the security
	// label), which sysfs files answer with no attributes.
	pathXattr
)

// pathCalls are the calls the filter host view serves.
var pathCalls = []pathCall{
	{name: "open", x8664: 2, arm64: -1, dirfd: -1, path: 0, flags: 1, kind: pathOpen},
	{name: "openat", x8664: 257, arm64: 56, dirfd: 0, path: 1, flags: 2, kind: pathOpen},
	{name: "openat2", x8664: 437, arm64: 437, dirfd: 0, path: 1, flags: -1, kind: pathOpen},
	{name: "stat", x8664: 4, arm64: -1, dirfd: -1, path: 0, flags: -1, kind: pathStat, viaDispatch: true},
	{name: "lstat", x8664: 6, arm64: -1, dirfd: -1, path: 0, flags: -1, kind: pathLstat, viaDispatch: true},
	{name: "newfstatat", x8664: 262, arm64: 79, dirfd: 0, path: 1, flags: 3, kind: pathStat},
	{name: "statx", x8664: 332, arm64: 291, dirfd: 0, path: 1, flags: 2, kind: pathStatx},
	{name: "access", x8664: 21, arm64: -1, dirfd: -1, path: 0, flags: -1, kind: pathAccess, viaDispatch: true},
	{name: "faccessat", x8664: 269, arm64: 48, dirfd: 0, path: 1, flags: -1, kind: pathAccess, viaDispatch: true},
	{name: "faccessat2", x8664: 439, arm64: 439, dirfd: 0, path: 1, flags: 3, kind: pathAccess, viaDispatch: true},
	{name: "readlink", x8664: 89, arm64: -1, dirfd: -1, path: 0, flags: -1, kind: pathReadlink, viaDispatch: true},
	{name: "readlinkat", x8664: 267, arm64: 78, dirfd: 0, path: 1, flags: -1, kind: pathReadlink, viaDispatch: true},
	{name: "getxattr", x8664: 191, arm64: 8, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
	{name: "lgetxattr", x8664: 192, arm64: 9, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
	{name: "listxattr", x8664: 194, arm64: 11, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
	{name: "llistxattr", x8664: 195, arm64: 12, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
}

// pathCallFor is the path call of x86_64 syscall nr, if it is one.
func pathCallFor(nr int32) (*pathCall, bool) {
	for i := range pathCalls {
		if pathCalls[i].x8664 == int(nr) {
			return &pathCalls[i], true
		}
	}
	return nil, false
}
