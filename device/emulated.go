package device

import "github.com/neuronfs/neuronfs/ioctl"

// Emulated says whether neuronfs serves macro m with a handler of its own.
// A macro without one is still dispatched, but answered as unsupported
// (ENOTSUPP, see newDispatcher); the command docs (docs/commands/, made
// by internal/docgen) report which is which from this, not from prose.
func Emulated(m ioctl.Macro) bool {
	return commands[m].handler != nil
}
