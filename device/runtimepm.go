package device

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// runtimePM is the state behind a device's power/ directory: the files the
// kernel's runtime-PM core gives every registered device.
type runtimePM struct {
	control atomic.Pointer[string] // "auto" or "on"
	// active is when the device went active (zero: runtime PM is not
	// enabled for it, as for a class device no driver manages).
	active time.Time
}

// Defaults of the two kinds of device neuronfs shows: a class device
// created without a parent (runtime PM never enabled) and a PCI function
// bound to its driver (the PCI core forbids runtime suspend until the
// driver allows it, so the function stays active).
func classDevicePM() *runtimePM { return newRuntimePM("auto", time.Time{}) }
func pciFunctionPM() *runtimePM { return newRuntimePM("on", time.Now()) }

func newRuntimePM(control string, active time.Time) *runtimePM {
	p := &runtimePM{active: active}
	p.control.Store(&control)
	return p
}

// attributes lists the files of dir (e.g. "power") with the kernel's
// modes and answers: no autosuspend delay (reads and writes fail with
// EIO), a control that takes "on" or "auto", and the status and times.
func (p *runtimePM) attributes(dir string) []Attr {
	status, activeTime := "unsupported\n", func() string { return "0\n" }
	if !p.active.IsZero() {
		status = "active\n"
		activeTime = func() string { return fmt.Sprintf("%d\n", time.Since(p.active).Milliseconds()) }
	}
	noAutosuspend := func([]byte) syscall.Errno { return syscall.EIO }
	return []Attr{
		{Path: dir + "/autosuspend_delay_ms", Mode: 0o644, ReadErr: syscall.EIO, Store: noAutosuspend},
		{Path: dir + "/control", Mode: 0o644, Show: func() string { return *p.control.Load() + "\n" }, Store: p.storeControl},
		{Path: dir + "/runtime_active_time", Mode: 0o444, Show: activeTime},
		{Path: dir + "/runtime_status", Mode: 0o444, Show: func() string { return status }},
		{Path: dir + "/runtime_suspended_time", Mode: 0o444, Show: func() string { return "0\n" }},
	}
}

// storeControl takes "on" or "auto", with or without a newline.
func (p *runtimePM) storeControl(data []byte) syscall.Errno {
	v := strings.TrimSuffix(string(data), "\n")
	if v != "on" && v != "auto" {
		return syscall.EINVAL
	}
	p.control.Store(&v)
	return 0
}
