package chardev

// pathCall is a system call that takes a path, as the filter host view
// (Config.Paths) serves it: the call (its number is the architecture's,
// sysArch; an architecture without it never makes it), which arguments
// are the directory descriptor (-1: AT_FDCWD), the path and the flags
// (-1: none), the same on every architecture.
type pathCall struct {
	call        sysCall
	dirfd, path int
	flags       int
	kind        pathKind
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
	{call: sysOpen, dirfd: -1, path: 0, flags: 1, kind: pathOpen},
	{call: sysOpenat, dirfd: 0, path: 1, flags: 2, kind: pathOpen},
	{call: sysOpenat2, dirfd: 0, path: 1, flags: -1, kind: pathOpen},
	{call: sysStat, dirfd: -1, path: 0, flags: -1, kind: pathStat, viaDispatch: true},
	{call: sysLstat, dirfd: -1, path: 0, flags: -1, kind: pathLstat, viaDispatch: true},
	{call: sysNewfstatat, dirfd: 0, path: 1, flags: 3, kind: pathStat},
	{call: sysStatx, dirfd: 0, path: 1, flags: 2, kind: pathStatx},
	{call: sysAccess, dirfd: -1, path: 0, flags: -1, kind: pathAccess, viaDispatch: true},
	{call: sysFaccessat, dirfd: 0, path: 1, flags: -1, kind: pathAccess, viaDispatch: true},
	{call: sysFaccessat2, dirfd: 0, path: 1, flags: 3, kind: pathAccess, viaDispatch: true},
	{call: sysReadlink, dirfd: -1, path: 0, flags: -1, kind: pathReadlink, viaDispatch: true},
	{call: sysReadlinkat, dirfd: 0, path: 1, flags: -1, kind: pathReadlink, viaDispatch: true},
	{call: sysGetxattr, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
	{call: sysLgetxattr, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
	{call: sysListxattr, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
	{call: sysLlistxattr, dirfd: -1, path: 0, flags: -1, kind: pathXattr, viaDispatch: true},
}

// pathCallFor is the path call of call c, if it is one.
func pathCallFor(c sysCall) (*pathCall, bool) {
	for i := range pathCalls {
		if pathCalls[i].call == c {
			return &pathCalls[i], true
		}
	}
	return nil, false
}
