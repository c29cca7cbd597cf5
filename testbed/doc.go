// Package testbed starts an emulated AWS Neuron host for one Go test:
// device nodes with the real driver's ioctls, the driver's sysfs, PCI
// functions, /proc/devices and DMI, as `neuronfs run` gives a command, and
// the control interface (docs/control.md) to inject faults and read what
// the driver tracks.
//
//	func TestMyTool(t *testing.T) {
//		tb := testbed.New(t, testbed.Instance("trn2.48xlarge"))
//		out, err := tb.Command("my-tool", "--list").Output()
//		...
//	}
//
// New serves the devices from the test process and mounts them under a
// temporary directory (Root); Command runs a program in a private mount
// namespace where that tree is bound over /dev and /sys, the way `run`
// does. The host goes when the test ends (t.Cleanup): its commands still
// running are killed, the mount is detached.
//
// Nothing is left behind when the test binary dies either (a failure, a
// panic, SIGKILL, go test's -timeout): New starts the binary's exit
// guard, a small process that aborts and detaches the mounts, and kills
// the commands, as soon as the binary exits. The guard and the commands'
// launcher are the test binary itself, re-executed; this package's init
// and the guard's recognise those runs before any test code, so a test
// binary needs no TestMain for them.
//
// Requirements: /dev/fuse, and root or, without root, an unprivileged
// user namespace (as `neuronfs run` needs without root). FUSE passthrough
// (Linux 6.9, root only) is used where present, else the commands' device
// descriptors are served by the supervisor. Without root a mounter, the
// test binary re-executed in a user namespace of its own, mounts for the
// test process, and each command attaches a copy of that mount
// (usermount.go, docs/testing.md). Where nothing can be mounted (an
// unprivileged container) New serves the filter view instead
// (filterview.go): commands run under a seccomp filter whose supervisor
// answers the host's paths, and the test process has no tree (Root
// fails the test). Where no host starts, New fails the test with one
// line saying why: a device suite that silently skips passes for
// nothing. Skipping is opted into, per test
// with the SkipWithoutHost option or for the whole run with
// NEURONFS_SKIP_WITHOUT_HOST=1; NEURONFS_REQUIRE_FUSE=1 (as CI sets it)
// makes it a failure whatever was opted into.
package testbed
