package testbed

import (
	"syscall"

	"github.com/neuronfs/neuronfs/device"
)

// Aimed faults, as fault-list items for Faults and InjectFaults (the
// syntax is docs/control.md's fail:CMD:ERRNO:...). cmd names an ioctl as
// the driver's header does, with or without NEURON_IOCTL_: "MEM_ALLOC".
// Calls are counted, over the whole host, from when the item is written.

// FailCall fails the n-th call of cmd (from 1) with errno; the calls
// before and after it pass.
func FailCall(cmd string, errno syscall.Errno, n uint64) string {
	return device.CallFault{Command: cmd, Errno: errno, Nth: n}.String()
}

// FailCallsFrom fails the n-th call of cmd and every later one.
func FailCallsFrom(cmd string, errno syscall.Errno, n uint64) string {
	return device.CallFault{Command: cmd, Errno: errno, Nth: n, Repeat: true}.String()
}

// FailCallsRandomly fails each call of cmd with the chance percent (0.01
// to 100); the same seed fails the same calls, on any host.
func FailCallsRandomly(cmd string, errno syscall.Errno, percent float64, seed uint64) string {
	return device.CallFault{Command: cmd, Errno: errno, Percent: percent, Seed: seed}.String()
}
