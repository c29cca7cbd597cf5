// Package runtime is a Go client of the Neuron driver: the NDL layer that
// finds devices, opens them the way the vendor library does (one normal fd
// per device, one free-access fd per process for the misc lane) and issues
// typed ioctls. It works against real devices and emulated ones alike.
package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Host locates the driver's files: "/" on a host with the driver (or
// inside `neuronfs run`), the mount point of a bare `neuronfs mount`.
type Host struct{ Root string }

// System is the host as programs see it.
var System = Host{Root: "/"}

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

// DeviceIndices lists the N of every /dev/neuronN, sorted.
func (h Host) DeviceIndices() ([]int, error) {
	entries, err := os.ReadDir(h.path("dev"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "neuron"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 {
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// DriverVersion reads /sys/module/neuron/version.
func (h Host) DriverVersion() (string, error) {
	b, err := os.ReadFile(h.path("sys/module/neuron/version"))
	if err != nil {
		return "", fmt.Errorf("driver version: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// SysfsDevice reads an attribute of /sys/devices/virtual/neuron_device/neuronN.
func (h Host) SysfsDevice(index int, attr string) (string, error) {
	b, err := os.ReadFile(h.path(fmt.Sprintf("sys/devices/virtual/neuron_device/neuron%d/%s", index, attr)))
	return strings.TrimSpace(string(b)), err
}

// Error is a failed ioctl: the command and what the driver answered.
type Error struct {
	Cmd   string
	Errno syscall.Errno // 0 when the driver returned a positive count
	// NotCopied is the driver's positive "bytes not copied" count.
	NotCopied int
}

func (e *Error) Error() string {
	if e.Errno == 0 {
		return fmt.Sprintf("%s: %d bytes not copied", e.Cmd, e.NotCopied)
	}
	return fmt.Sprintf("%s: %v", e.Cmd, e.Errno)
}

// Unwrap lets errors.Is(err, syscall.EBUSY) work.
func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}
