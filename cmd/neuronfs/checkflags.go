package main

import (
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// check finds the mistakes in the host flags before anything starts, so
// each is a usage error in one line of the user's terms (what the device
// package would say later is a failure with its package's prefix). It
// fills in the default instance.
func (h *hostFlags) check() error {
	if _, err := logrus.ParseLevel(h.logLevel); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warning or error", h.logLevel)
	}
	if _, err := logFormatter(h.logFmt); err != nil {
		return fmt.Errorf("--log-format %q: want text or json", h.logFmt)
	}
	if h.backing.envErr != nil {
		return h.backing.envErr
	}
	arch, err := parseArch(h.arch)
	if err != nil {
		return fmt.Errorf("--arch: %w", err)
	}
	if h.instance == "" {
		h.instance = "trn2.48xlarge"
		if arch != 0 {
			h.instance = defaultInstances[arch]
		}
	}
	inst, err := dhal.LookupInstance(h.instance)
	if err != nil {
		return fmt.Errorf("unknown instance %q (known: %s)", h.instance, strings.Join(dhal.InstanceNames(), ", "))
	}
	if arch != 0 && arch != inst.Arch() {
		return fmt.Errorf("--arch %s: %s is %s", h.arch, inst.Name, inst.Arch())
	}
	if max := dhal.MaxDevicesFor(inst.Arch()); h.devices < 0 || h.devices > max {
		return fmt.Errorf("--devices %d: %s takes 1 to %d", h.devices, inst.Name, max)
	}
	table, err := ioctl.ForVersion(h.driver)
	if err != nil {
		return fmt.Errorf("unknown driver version %q (known: %s)", h.driver, strings.Join(ioctl.Versions(), ", "))
	}
	if _, ok := table.Compat[uint32(inst.Arch())]; !ok {
		var fit []string
		for _, v := range ioctl.Versions() {
			if t, _ := ioctl.ForVersion(v); t != nil && hasCompat(t, inst.Arch()) {
				fit = append(fit, v)
			}
		}
		return fmt.Errorf("--driver-version %s does not support %s (%s takes %s)", h.driver, inst.Product.Name, inst.Name, strings.Join(fit, ", "))
	}
	if h.timeScale <= 0 {
		return fmt.Errorf("--time-scale %g: want a positive factor", h.timeScale)
	}
	if h.execLatency < 0 {
		return fmt.Errorf("--exec-latency %v: want 0 or more", h.execLatency)
	}
	if h.hangEnd < 0 {
		return fmt.Errorf("--hang-end %v: want 0 (never) or more", h.hangEnd)
	}
	if err := h.execTrace.check(); err != nil {
		return err
	}
	if err := h.logFile.check(); err != nil {
		return err
	}
	if err := device.CheckFaults(h.inject); err != nil {
		return fmt.Errorf("--inject: %w", err)
	}
	if _, _, err := h.pod.check(h.instance); err != nil {
		return err
	}
	return nil
}

func hasCompat(t *ioctl.Table, a dhal.Arch) bool {
	_, ok := t.Compat[uint32(a)]
	return ok
}
