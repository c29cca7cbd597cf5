package main

import (
	"fmt"

	"github.com/neuronfs/neuronfs/ioctl"
)

// factColumns head the generated command tables; factCells fills the
// columns between the macro and its versions. "handler" says whether
// device/ registers one for the macro: without one the command is
// answered as unsupported.
var factColumns = []string{"macro", "value", "nr", "_IOC dir", "encoded size", "argument (sizeof)", "lane", "attach gate", "match rule", "versions", "handler"}

// factCells are what the one description says about one encoding of a
// command, rendered: two encodings with the same cells are one variant.
func factCells(c *ioctl.Command) []string {
	return []string{
		fmt.Sprintf("`0x%08x`", c.Cmd),
		fmt.Sprintf("0x%02x", c.Nr()),
		dirName(c.Dir),
		fmt.Sprint(c.EncodedSize()),
		argument(c),
		c.Lane.String(),
		gate(c),
		matchRule(c),
	}
}

// dirName is the _IOC macro the direction bits encode. The driver's
// directions are often the reverse of the data flow, so the table says
// what is encoded, not what moves.
func dirName(d uint32) string {
	switch d {
	case ioctl.DirNone:
		return "_IO"
	case ioctl.DirRead:
		return "_IOR"
	case ioctl.DirWrite:
		return "_IOW"
	default:
		return "_IOWR"
	}
}

func argument(c *ioctl.Command) string {
	switch {
	case c.ArgSize == 0:
		return "none"
	case c.ArgSize < 0 || c.Layout == nil:
		return "undefined in the headers"
	case c.Layout.Type == nil: // a scalar argument
		return fmt.Sprintf("`%s` (%d)", c.Layout.Name, c.ArgSize)
	default:
		return fmt.Sprintf("`struct %s` (%d)", c.Layout.Name, c.ArgSize)
	}
}

func gate(c *ioctl.Command) string {
	if c.AttachGated {
		return "attached callers only (else EACCES)"
	}
	return "no"
}

// matchRule says how the driver's dispatch finds the command's handler.
func matchRule(c *ioctl.Command) string {
	switch {
	case !c.MatchByNr:
		return "exact value"
	case c.ExactInFamily:
		return "_IOC_NR family; exact values only"
	case c.SizeSelects:
		return "_IOC_NR family; _IOC_SIZE picks the member"
	default:
		return "_IOC_NR family; handler checks the rest"
	}
}

func emulatedCell(e *entry) string {
	if e.emulated {
		return "yes"
	}
	return "none: ENOTSUPP"
}
