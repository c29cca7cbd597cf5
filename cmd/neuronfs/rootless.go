package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs"
)

// Rootless run: a caller without root gets a user namespace in which it
// is root (its own uid and gid mapped to 0) and a mount namespace owned by
// it; there the daemon mounts FUSE (allowed in a user namespace since
// Linux 4.18) and builds the view as root would. CMD then runs in a
// nested user namespace that maps the uid and gid it asked for (by
// default the caller's) to that root, so it sees itself as the caller
// while everything it does on the host is the caller's.

// usernsSysctls are the files whose values decide whether an unprivileged
// user namespace can be made and used, in the order they are checked.
var usernsSysctls = []struct{ name, file string }{
	{"user.max_user_namespaces", "/proc/sys/user/max_user_namespaces"},
	{"kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone"},
	{"kernel.apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"},
}

// usernsFacts are those values ("" where the kernel has no such file).
type usernsFacts map[string]string

func readUsernsFacts() usernsFacts {
	f := usernsFacts{}
	for _, s := range usernsSysctls {
		if b, err := os.ReadFile(s.file); err == nil {
			f[s.name] = strings.TrimSpace(string(b))
		}
	}
	return f
}

// errNoFUSEForUser is errNoFUSE for a caller without root.
func errNoFUSEForUser(uid int) error {
	return fmt.Errorf("/dev/fuse is missing or not usable by uid %d: run without root needs read-write access to it (e.g. a udev rule making it 0666, or the container given /dev/fuse); or use --host-view=filter, or sudo", uid)
}

// beforeClone names a sysctl that forbids unprivileged user namespaces
// outright.
func (f usernsFacts) beforeClone() error {
	if f["user.max_user_namespaces"] == "0" {
		return errors.New("user namespaces are disabled (sysctl user.max_user_namespaces=0): run without root needs one; raise it, or use --host-view=filter, or sudo")
	}
	if f["kernel.unprivileged_userns_clone"] == "0" {
		return errors.New("unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone=0): run without root needs one; set it to 1, or use --host-view=filter, or sudo")
	}
	return nil
}

// cloneFailed explains a failed start of the daemon in its namespaces:
// the clone of the user namespace, or (its capabilities taken away) the
// unshare of the mount namespace right after.
func (f usernsFacts) cloneFailed(err error) error {
	if e := f.beforeClone(); e != nil {
		return e
	}
	switch {
	case (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) && f["kernel.apparmor_restrict_unprivileged_userns"] == "1":
		return f.mountFailed(err)
	case errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EUSERS):
		return fmt.Errorf("cannot create a user namespace (%v): the limit user.max_user_namespaces is reached; raise it or use sudo", errnoOf(err))
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("cannot create a user namespace (%v): run without root needs one; a container's seccomp profile may forbid clone(CLONE_NEWUSER) (allow it), or use --host-view=filter, or sudo", errnoOf(err))
	}
	return fmt.Errorf("cannot create a user namespace: %w", err)
}

// mountFailed explains a mount refused inside the user namespace: on
// Ubuntu (since 24.04) AppArmor lets the namespace be made but takes its
// capabilities away.
func (f usernsFacts) mountFailed(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		if f["kernel.apparmor_restrict_unprivileged_userns"] == "1" {
			return fmt.Errorf("AppArmor denies mounts in unprivileged user namespaces (%v; sysctl kernel.apparmor_restrict_unprivileged_userns=1): set it to 0, give neuronfs an AppArmor profile with 'userns,', or use sudo", errnoOf(err))
		}
		return fmt.Errorf("mounting in the user namespace was refused (%v): a security module or container profile forbids it; use sudo", errnoOf(err))
	}
	return err
}

// rootlessMountError is mountError for a run without root.
func rootlessMountError(err error) error {
	if errors.Is(err, fs.ErrMmapNotCoherent) {
		return errors.New("FUSE passthrough is unavailable without root (the kernel gives it to CAP_SYS_ADMIN on the host only), and mmap of FUSE device descriptors needs it: keep --device-fds=auto or supervisor (without --no-chardev), or --degraded-mmap starts without it")
	}
	return readUsernsFacts().mountFailed(err)
}

// errnoOf is err's errno name, or err.
func errnoOf(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// rootlessPreflight checks what a run without root needs before trying:
// first what only an administrator can change.
func rootlessPreflight(uid int) error {
	if err := readUsernsFacts().beforeClone(); err != nil {
		return err
	}
	if preflightFUSE() != nil {
		return errNoFUSEForUser(uid)
	}
	return nil
}

// rootlessNamespaces makes the daemon root of a new user namespace that
// maps only the caller, with a mount namespace of its own.
func rootlessNamespaces() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWUSER,
		Unshareflags: syscall.CLONE_NEWNS,
		UidMappings:  []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:  []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// An unprivileged map needs setgroups denied.
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// asUserInside starts a process in a nested user namespace where uid and
// gid map to this namespace's root (the caller on the host): it sees
// itself as uid, holds no capability here, and what it creates on the
// host belongs to the caller.
func asUserInside(uid, gid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: 0, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: 0, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
}
