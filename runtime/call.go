package runtime

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Call issues any driver command on a device fd with its argument struct
// from package ioctl (the one definition shared with the daemon). The
// argument's type must be the command's: a mismatch is an error before
// any syscall, so a wrong struct can never reach the driver. Errors carry
// the command's name and errno (or not-copied count).
func Call[T any](d *Device, cmd uint32, arg *T) error { return call(d.fd, cmd, arg) }

// CallMisc is Call on the free-access (O_WRONLY) fd, for misc-lane
// commands.
func CallMisc[T any](m *Misc, cmd uint32, arg *T) error { return call(m.fd, cmd, arg) }

func call[T any](fd int, cmd uint32, arg *T) error {
	c, ok := ioctl.Default().Lookup(cmd)
	if !ok {
		return fmt.Errorf("runtime: command %#x is no driver command", cmd)
	}
	name := strings.TrimPrefix(c.Name, "NEURON_IOCTL_")
	if want, got := c.ArgType, reflect.TypeFor[T](); want != nil && !sameLayout(want, got) {
		return fmt.Errorf("runtime: %s takes %v, not %v", name, want, got)
	}
	return do(fd, name, cmd, arg)
}

// sameLayout accepts the command's own type or one laid out identically
// (EVENT_GET/SET are declared with the semaphore struct, while the driver
// reads the event struct of the same shape).
func sameLayout(a, b reflect.Type) bool {
	if a == b {
		return true
	}
	if a.Kind() != reflect.Struct || b.Kind() != reflect.Struct || a.Size() != b.Size() || a.NumField() != b.NumField() {
		return false
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Offset != fb.Offset || fa.Type.Size() != fb.Type.Size() {
			return false
		}
	}
	return true
}
