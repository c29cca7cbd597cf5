package ioctl

import (
	"reflect"
	"strings"
)

// Layout is a C argument type member by member, with what each member
// means to the driver: the one description dispatch, the tracer, the
// decoder and replay all read (generated from the reference tables and
// abi-roles.tsv).
type Layout struct {
	Name   string       // C struct tag, or the scalar type of a scalar argument
	Type   reflect.Type // its Go mirror (nil for a scalar argument)
	Size   int
	Fields []Field
}

// Field is one top-level member.
type Field struct {
	Name   string
	Offset int
	Size   int // 0 for a flexible array member
	CType  string
	Role   Role
	// Target is what a pointer member points at.
	Target Target
	// Count names the member holding how many elements of Elem bytes a
	// pointer member's buffer (or an array member) has.
	Count string
	Elem  int
	// Pointee is the size of what a pointer member points at when its
	// type says (a struct or a scalar), 0 otherwise.
	Pointee int
	// ElemLayout is the element type of an array of structs.
	ElemLayout *Layout
}

// Role says what a member's value is.
type Role uint8

const (
	RoleValue       Role = iota // a plain value
	RolePointer                 // a user-space address of a buffer (see Target)
	RoleHandle                  // a memory handle the driver handed out
	RoleAddress                 // a physical address (what mmap takes as its offset)
	RolePID                     // a process id (tgid)
	RoleBARAddress              // a kernel address of a BAR (DEVICE_INFO), as BAR_READ takes them
	RoleUserAddress             // a user-space address the driver resolves (not a buffer it copies)
	RoleArray                   // an array of structs whose count another member gives
	RoleExtent                  // the bytes the struct's address member covers
)

// Target says what a pointer member's buffer holds.
type Target uint8

const (
	TargetNone        Target = iota
	TargetBytes              // data
	TargetHandle             // a memory handle the driver writes
	TargetAddress            // a physical address the driver writes
	TargetDescriptors        // DMA descriptors (with physical addresses inside)
	TargetBARAddress         // BAR register addresses
	TargetFD                 // a file descriptor the driver writes
)

// Pointer says whether the member holds a user-space address.
func (f Field) Pointer() bool { return f.Role == RolePointer }

// Handle says whether the member holds a memory handle by value.
func (f Field) Handle() bool { return f.Role == RoleHandle }

// Signed says whether the member is a signed integer.
func (f Field) Signed() bool {
	return strings.HasPrefix(f.CType, "__s") || f.CType == "int" || f.CType == "pid_t"
}

// Field returns the member called name.
func (l *Layout) Field(name string) (Field, bool) {
	for _, f := range l.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// LayoutOf returns the layout of a Go mirror type, or nil.
func LayoutOf(t reflect.Type) *Layout {
	for _, l := range layouts {
		if l.Type == t {
			return l
		}
	}
	return nil
}

// Macro is one ioctl macro of any emulated driver version, as a constant
// (generated): handlers are keyed by it, so a misspelt name does not
// compile.
type Macro uint16

func (m Macro) String() string {
	if int(m) < len(macroNames) {
		return macroNames[m]
	}
	return "Macro(?)"
}

// MacroPrefix starts every macro's C name.
const MacroPrefix = "NEURON_IOCTL_"

// MacroNamed finds a macro by its C name, with or without MacroPrefix,
// in any case (fault lists name commands so: "MEM_ALLOC").
func MacroNamed(name string) (Macro, bool) {
	name = strings.ToUpper(name)
	if !strings.HasPrefix(name, MacroPrefix) {
		name = MacroPrefix + name
	}
	for m := range macroNames {
		if m > 0 && macroNames[m] == name {
			return Macro(m), true
		}
	}
	return 0, false
}
