package main

import (
	"fmt"

	"github.com/neuronfs/neuronfs/ioctl"
)

// roleNames and targetNames name ioctl's member roles as abi-roles.tsv
// spells them. A role missing here stops docgen, so a new role cannot be
// rendered as something it is not.
var roleNames = map[ioctl.Role]string{
	ioctl.RoleValue:       "value",
	ioctl.RolePointer:     "user pointer",
	ioctl.RoleHandle:      "memory handle",
	ioctl.RoleAddress:     "physical address",
	ioctl.RolePID:         "pid",
	ioctl.RoleBARAddress:  "BAR address",
	ioctl.RoleUserAddress: "user address",
	ioctl.RoleArray:       "array",
	ioctl.RoleExtent:      "extent of the address",
}

var targetNames = map[ioctl.Target]string{
	ioctl.TargetBytes:       "bytes",
	ioctl.TargetHandle:      "a memory handle",
	ioctl.TargetAddress:     "a physical address",
	ioctl.TargetDescriptors: "DMA descriptors",
	ioctl.TargetBARAddress:  "BAR addresses",
	ioctl.TargetFD:          "a file descriptor",
}

// role describes what a member holds, from its role, target and count.
func role(f ioctl.Field) (string, error) {
	r, ok := roleNames[f.Role]
	if !ok {
		return "", fmt.Errorf("docgen: member %s has role %d, which roles.go does not name", f.Name, f.Role)
	}
	if f.Role == ioctl.RoleValue {
		return "", nil // the common case: leave the cell empty
	}
	if f.Target != ioctl.TargetNone {
		t, ok := targetNames[f.Target]
		if !ok {
			return "", fmt.Errorf("docgen: member %s has target %d, which roles.go does not name", f.Name, f.Target)
		}
		r += " to " + t
	}
	if f.Pointee > 0 {
		r += fmt.Sprintf(" (%d bytes)", f.Pointee)
	}
	switch {
	case f.Count != "" && f.Elem == 1:
		r += fmt.Sprintf(", `%s` bytes long", f.Count)
	case f.Count != "":
		r += fmt.Sprintf(", `%s` elements of %d bytes", f.Count, f.Elem)
	}
	if f.ElemLayout != nil {
		r += fmt.Sprintf(" of `struct %s`", f.ElemLayout.Name)
	}
	return r, nil
}
