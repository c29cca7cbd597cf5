package testbed

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/internal/chardev"
	"github.com/neuronfs/neuronfs/internal/exitguard"
)

// The filter view, as `neuronfs run --host-view=filter` serves it
// (docs/mount-run.md): where nothing can be mounted (an unprivileged
// container: no /dev/fuse, no user namespace, no capability), the test
// process serves the devices without a mount (fs.Unmounted) and each
// command runs under no_new_privs and the view's seccomp filter, whose
// supervisor answers the device and sysfs paths from a shadow tree
// (hostview.Shadow) and the opens of /dev/neuronN with direct
// descriptors. The test process itself is not under the filter: it has
// no tree to open (Root and Control fail the test with one line), but
// State, InjectFaults and System work in process.

// assumeContainerEnv, set to 1, makes New serve the filter view where it
// could mount, as `neuronfs run`'s auto does.
const assumeContainerEnv = "NEURONFS_ASSUME_CONTAINER"

// filterReason is why New serves the filter view without trying to
// mount, or "".
func filterReason() string {
	if os.Getenv(assumeContainerEnv) == "1" {
		return "$" + assumeContainerEnv + "=1"
	}
	return readHostFacts().missing()
}

// refused reports a mount refused by policy, which no sysctl tells
// before trying: a container's seccomp profile refusing the user
// namespace, or root without CAP_SYS_ADMIN.
func refused(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)
}

// serveFilter serves the host for the filter view; why is the reason
// there is no mount.
func (tb *Testbed) serveFilter(why string) (exitguard.Reg, error) {
	tb.noMount = why
	tb.fsys = fs.Unmounted(tb.sys, fs.Options{Log: tb.log})
	var err error
	if tb.direct, err = tb.fsys.NewDirect(); err != nil {
		tb.fsys.CloseUnmounted()
		return exitguard.Reg{}, err
	}
	if tb.shadow, err = hostview.NewShadow(tb.sys); err != nil {
		tb.direct.Close()
		tb.fsys.CloseUnmounted()
		return exitguard.Reg{}, err
	}
	// If the test binary dies first, its guard removes the shadow tree.
	reg, err := tb.guard.Command("rm", "-rf", tb.shadow.Root())
	if err != nil {
		tb.stopHost()
		return exitguard.Reg{}, err
	}
	return reg, nil
}

// FilterView reports whether the host is served by the filter view
// (nothing mounted; see New): then only Commands reach the host's paths.
func (tb *Testbed) FilterView() bool { return tb.shadow != nil }

// needTree fails the test, with one line, when the host has no tree in
// this process (the filter view).
func (tb *Testbed) needTree(what string) {
	if tb.shadow != nil {
		tb.t.Helper()
		tb.t.Fatalf("testbed: %s: the host is served by the filter view (%s), with no tree in the test process: reach its paths from a Command", what, tb.noMount)
	}
}

// filterCommand is a filter view command's start: no namespace (none
// can be made), only the launcher dying with the test's thread.
func filterCommand() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// filterConfig is the supervisor's configuration for a filter view
// command's listener.
func (tb *Testbed) filterConfig(listener int, nodes []string) chardev.Config {
	return chardev.Config{
		Listener: listener,
		Major:    tb.layout.Major,
		Nodes:    nodes,
		Files:    tb.direct.Paths(),
		Open:     tb.direct.Open,
		Mmap:     tb.fsys.CheckMmap,
		Direct:   tb.direct,
		Paths:    tb.shadow,
		Log:      tb.log,
	}
}
