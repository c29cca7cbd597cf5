package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// hostViewEnv sets --host-view's default; assumeContainerEnv, set to 1,
// makes auto judge as in an unprivileged container (no /dev/fuse, no user
// namespace), to try the filter view where both exist.
const (
	hostViewEnv        = "NEURONFS_HOST_VIEW"
	assumeContainerEnv = "NEURONFS_ASSUME_CONTAINER"
)

// How run makes the emulated host (--host-view).
const (
	// hostViewAuto: mount where FUSE and root or a user namespace
	// allow it, else filter.
	hostViewAuto = "auto"
	// hostViewMount: a FUSE mount bound over /dev and /sys in a private
	// mount namespace.
	hostViewMount = "mount"
	// hostViewFilter: the seccomp supervisor alone answers the device and
	// sysfs paths (hostview.Shadow); no mount, namespace or capability.
	hostViewFilter = "filter"
)

// hostViewFlag is --host-view.
type hostViewFlag string

func defaultHostView() hostViewFlag {
	if env := os.Getenv(hostViewEnv); env != "" {
		return hostViewFlag(env)
	}
	return hostViewAuto
}

func (v *hostViewFlag) String() string { return string(*v) }
func (v *hostViewFlag) Set(s string) error {
	switch s {
	case hostViewAuto, hostViewMount, hostViewFilter:
		*v = hostViewFlag(s)
		return nil
	}
	return fmt.Errorf("want auto, mount or filter")
}

// resolve picks mount or filter: auto takes filter when neither FUSE nor
// a way to mount (root, or a user namespace) is available.
func (v hostViewFlag) resolve() (hostViewFlag, error) {
	if err := new(hostViewFlag).Set(string(v)); err != nil {
		return "", fmt.Errorf("--host-view or $%s %q: %w", hostViewEnv, string(v), err)
	}
	if v != hostViewAuto {
		return v, nil
	}
	if os.Getenv(assumeContainerEnv) == "1" || preflightFUSE() != nil {
		return hostViewFilter, nil
	}
	if os.Geteuid() != 0 && readUsernsFacts().beforeClone() != nil {
		return hostViewFilter, nil
	}
	return hostViewMount, nil
}

// registerHostView adds --host-view to run's flags.
func registerHostView(fl *flag.FlagSet) *hostViewFlag {
	v := defaultHostView()
	fl.Var(&v, "host-view", "how the emulated host is made: mount (FUSE bound over /dev and /sys in private namespaces), filter (the seccomp supervisor alone answers the device and sysfs paths: no /dev/fuse, namespace or capability, for unprivileged containers) or auto (mount where possible, else filter); $"+hostViewEnv+" sets the default")
	return &v
}

// runIfFilterView runs CMD under the filter host view when v resolves to
// it (ok true); otherwise run goes on to mount.
func runIfFilterView(fl *flag.FlagSet, h *hostFlags, u *userFlags, noChardev bool, deviceFDs deviceFDsFlag, v hostViewFlag) (status int, ok bool) {
	mode, err := v.resolve()
	if err != nil {
		return usageFail("run", err), true
	}
	if mode != hostViewFilter {
		return 0, false
	}
	if noChardev || deviceFDs == deviceFDsFUSE {
		return usageFail("run", fmt.Errorf("--host-view=filter serves the character devices with supervisor descriptors: drop --no-chardev and --device-fds=fuse")), true
	}
	if os.Geteuid() != 0 {
		u.forCaller(fl)
	}
	if err := h.check(); err != nil {
		return usageFail("run", err), true
	}
	if err := u.check(); err != nil {
		return usageFail("run", err), true
	}
	return runFilterView(h, u, fl.Args()), true
}

// rootlessStartFailed answers a rootless run whose user namespace could
// not be made. A container's seccomp profile refuses it with EPERM, which
// no sysctl tells before trying: under auto the filter view serves
// instead; otherwise the refusal is explained.
func rootlessStartFailed(h *hostFlags, u *userFlags, v hostViewFlag, args []string, err error) int {
	if v == hostViewAuto && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)) {
		return runFilterView(h, u, args)
	}
	return failLine("run", readUsernsFacts().cloneFailed(err))
}
