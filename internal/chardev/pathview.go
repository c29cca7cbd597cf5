package chardev

import "golang.org/x/sys/unix"

// PathView is the emulated host of run's filter host view (Config.Paths):
// no device node, sysfs directory or /proc/devices line exists on disk,
// so the filter sends every path-taking call and the supervisor answers
// those whose path the view emulates, from a shadow tree of regular
// files, directories and symlinks; every other path goes on to the
// kernel (SECCOMP_USER_NOTIF_FLAG_CONTINUE). It is no security boundary:
// a program can reach the real paths another way (a symlink of its own,
// a path changed after the supervisor read it).
type PathView interface {
	// Route says what an absolute, lexically clean path names in the
	// view.
	Route(path string) Route
	// Root is the shadow tree's root directory: a path under it (a
	// shadow directory's descriptor, used as dirfd) is read as the path
	// it shadows.
	Root() string
	// Attribute finds the attribute whose shadow file is at path (with
	// no symlink in it).
	Attribute(path string) (int, bool)
	// Attr is attribute i.
	Attr(i int) Attribute
}

// RouteKind is what a path names in the view.
type RouteKind int

// The kinds of Route.
const (
	// RouteReal: not emulated; the kernel answers.
	RouteReal RouteKind = iota
	// RouteDevice: the device node of Minor.
	RouteDevice
	// RouteShadow: the file at Shadow stands for it.
	RouteShadow
)

// Route is a path's place in the view.
type Route struct {
	Kind   RouteKind
	Minor  int
	Shadow string
	// Own: the file is the daemon's user's (neuronfs's control files,
	// which the user of run may write), not root's like sysfs.
	Own bool
}

// Attribute is one sysfs attribute behind a shadow file.
type Attribute struct {
	Mode uint32
	// Show renders the content (nil: none to read).
	Show func() string
	// Store takes a write (nil: not writable).
	Store func(data []byte) unix.Errno
	// UnprivilegedLen, if set, is how much of the content a caller
	// without root reads.
	UnprivilegedLen int
	// Own: the attribute is the daemon's user's (Route.Own).
	Own bool
}
