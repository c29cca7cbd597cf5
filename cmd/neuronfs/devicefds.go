package main

import (
	"fmt"
	"os"
)

// deviceFDsEnv sets --device-fds's default.
const deviceFDsEnv = "NEURONFS_DEVICE_FDS"

// What a device descriptor is under run (--device-fds).
const (
	// deviceFDsAuto: FUSE where its mmap is coherent (passthrough),
	// else the supervisor's.
	deviceFDsAuto = "auto"
	// deviceFDsFUSE: an open of the FUSE file; without passthrough mmap
	// needs --degraded-mmap and fails.
	deviceFDsFUSE = "fuse"
	// deviceFDsSupervisor: an open of the device's physical-memory file,
	// whose ioctls and closes the seccomp supervisor serves (fs.Direct).
	deviceFDsSupervisor = "supervisor"
)

// deviceFDsFlag is --device-fds.
type deviceFDsFlag string

func defaultDeviceFDs() deviceFDsFlag {
	if env := os.Getenv(deviceFDsEnv); env != "" {
		return deviceFDsFlag(env)
	}
	return deviceFDsAuto
}

func (d *deviceFDsFlag) String() string { return string(*d) }
func (d *deviceFDsFlag) Set(v string) error {
	switch v {
	case deviceFDsAuto, deviceFDsFUSE, deviceFDsSupervisor:
		*d = deviceFDsFlag(v)
		return nil
	}
	return fmt.Errorf("want auto, fuse or supervisor")
}

// check refuses a $NEURONFS_DEVICE_FDS the flag would refuse, and the
// supervisor's descriptors asked for on the command line without the
// character devices that bring them (noChardev; $NEURONFS_DEVICE_FDS
// gives way to --no-chardev).
func (d deviceFDsFlag) check(noChardev bool) error {
	if err := new(deviceFDsFlag).Set(string(d)); err != nil {
		return fmt.Errorf("--device-fds or $%s %q: %w", deviceFDsEnv, string(d), err)
	}
	if noChardev && d == deviceFDsSupervisor {
		return fmt.Errorf("--device-fds=supervisor needs the character devices (drop --no-chardev)")
	}
	return nil
}
