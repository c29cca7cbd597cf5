package testbed

import (
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/pod"
)

// Option configures New.
type Option func(*config) error

type config struct {
	dev             device.Config
	faults          string
	skipWithoutHost bool
}

// Instance is the EC2 instance type to emulate (default trn2.48xlarge);
// `neuronfs instances` lists them.
func Instance(name string) Option {
	return func(c *config) error { c.dev.Instance = name; return nil }
}

// Devices is the device count (default: the instance's).
func Devices(n int) Option {
	return func(c *config) error { c.dev.Devices = n; return nil }
}

// DriverVersion is the emulated driver, e.g. "2.29.0.0" (default
// 2.25.4.0).
func DriverVersion(v string) Option {
	return func(c *config) error { c.dev.DriverVersion = v; return nil }
}

// MemoryBacking is where device memory lives: "memfd" (host RAM) or
// "file:DIR". The default is $NEURONFS_MEMORY_BACKING, as for the CLI,
// else memfd.
func MemoryBacking(spec string) Option {
	return func(c *config) error {
		b, err := device.ParseBacking(spec)
		c.dev.Backing = b
		return err
	}
}

// MemoryLimit caps the device memory the backing holds, in bytes
// (negative: none; default half of host RAM on memfd).
func MemoryLimit(bytes int64) Option {
	return func(c *config) error { c.dev.MemoryLimit = bytes; return nil }
}

// Faults are switched on from the start, in the syntax of --inject and
// of the faults control file, e.g. "reset-fail,ecc-hbm=2".
func Faults(list string) Option {
	return func(c *config) error {
		c.faults = list
		return device.CheckFaults(list)
	}
}

// TimeScale is the factor on the driver's deadlines and poll intervals
// (default 0.001; 1 = the real durations).
func TimeScale(f float64) Option {
	return func(c *config) error { c.dev.TimeScale = f; return nil }
}

// Pod makes the host a server of an UltraServer pod (trn2u.48xlarge):
// p names the pod and its coordinator (a pod.NewLocal shared by the
// testbeds of one test forms a pod in process), nodeSerial is device 0's
// serial, which the election orders servers by.
func Pod(p pod.Config, nodeSerial uint64) Option {
	return func(c *config) error { c.dev.Pod, c.dev.NodeSerial = p, nodeSerial; return nil }
}
