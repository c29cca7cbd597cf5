// Package abi describes the driver's ioctl argument structs member by
// member, so a recorded argument can be printed with field names and its
// user pointers and memory handles found. The layouts come from the same
// reference tables as ioctl/ (see fields_gen.go); command numbers, names
// and struct sizes come from ioctl's version tables.
package abi

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"

	"github.com/neuronfs/neuronfs/ioctl"
)

// NestedCap is the most bytes of one pointed-to buffer a trace keeps.
const NestedCap = 256

// Field is one top-level member of a C struct.
type Field struct {
	Name   string
	Offset int
	Size   int // 0 for a flexible array member
	CType  string
}

// Pointer says whether the member holds a user-space address.
func (f Field) Pointer() bool { return strings.HasSuffix(strings.TrimSpace(f.CType), "*") }

// Handle says whether the member holds a memory handle the driver handed
// out (by value, not through a pointer): a *mem_handle, or a DMA ring's.
func (f Field) Handle() bool {
	return !f.Pointer() && (strings.HasSuffix(f.Name, "mem_handle") || ringHandles[f.Name])
}

// ringHandles are DMA_QUEUE_INIT's members that hold the rings' memory
// handles.
var ringHandles = map[string]bool{"tx_handle": true, "rx_handle": true, "rxc_handle": true}

// Struct is the layout of one argument type.
type Struct struct {
	Name   string
	Size   int
	Fields []Field
}

// scalarSizes gives the width of the C scalar types an argument or a
// pointee can have.
var scalarSizes = map[string]int{"__u8": 1, "__s8": 1, "char": 1, "__u16": 2, "__s16": 2, "__u32": 4, "__s32": 4, "int": 4, "pid_t": 4, "__u64": 8, "__s64": 8, "size_t": 8}

// Lookup returns the layout of a struct tag (with or without a _t typedef
// suffix) or of a scalar type, seen as a struct with one member "value".
func Lookup(name string) (Struct, bool) {
	for _, tab := range []map[string]Struct{structs, structs2_27} {
		if s, ok := tab[name]; ok {
			return s, true
		}
		if s, ok := tab[strings.TrimSuffix(name, "_t")]; ok {
			return s, true
		}
	}
	if n, ok := scalarSizes[name]; ok {
		return Struct{Name: name, Size: n, Fields: []Field{{Name: "value", Size: n, CType: name}}}, true
	}
	return Struct{}, false
}

// ForCommand returns a command of the table and the layout of its argument.
// ok is false for an unknown command; a known command without an argument,
// or whose struct the driver never defines, has a zero Struct.
func ForCommand(t *ioctl.Table, cmd uint32) (c *ioctl.Command, s Struct, ok bool) {
	c, ok = t.Lookup(cmd)
	if !ok {
		return nil, Struct{}, false
	}
	arg, found := commandArgs[c.Name]
	if !found {
		arg = commandArgs2_27[c.Name]
	}
	if arg == "" || strings.HasPrefix(arg, "?") {
		return c, Struct{}, true
	}
	s, _ = Lookup(arg)
	// The version table is the authority on the size (older versions
	// changed some structs).
	if c.ArgSize > 0 {
		s.Size = c.ArgSize
	}
	return c, s, true
}

// Nested is a pointer member and how many bytes it points at.
type Nested struct {
	Field Field
	// Len is the size of the buffer for the given struct contents, before
	// the cap; Capped is min(Len, NestedCap).
	Len, Capped int
}

// NestedBuffers lists the pointer members of s whose pointee size is known
// from arg (the struct's bytes): a scalar or struct pointee has its own
// size; a void buffer takes its length from a sibling "size" member.
func NestedBuffers(s Struct, arg []byte) []Nested {
	var out []Nested
	for _, f := range s.Fields {
		if !f.Pointer() {
			continue
		}
		n := pointeeSize(s, f, arg)
		if n <= 0 {
			continue
		}
		out = append(out, Nested{Field: f, Len: n, Capped: min(n, NestedCap)})
	}
	return out
}

// pointee returns the type a pointer member points at.
func pointee(f Field) string {
	p := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f.CType), "*"))
	p = strings.TrimPrefix(p, "const ")
	return strings.TrimPrefix(p, "struct ")
}

// FixedPointee returns the size of what a pointer member points at, or 0
// when only the struct's contents tell (a void buffer).
func FixedPointee(f Field) int {
	if p, ok := Lookup(pointee(f)); ok {
		return p.Size
	}
	return 0
}

func pointeeSize(s Struct, f Field, arg []byte) int {
	if n, ok := arrayLen(s, f, arg); ok {
		return n
	}
	if p := pointee(f); p == "void" || p == "char" {
		for _, g := range s.Fields {
			if g.Name == "size" && !g.Pointer() {
				v, ok := Uint(arg, g)
				if !ok || v > 1<<30 {
					return 0
				}
				return int(v)
			}
		}
		return 0
	}
	return FixedPointee(f)
}

// Uint reads an unsigned member of up to 8 bytes from a struct's bytes.
func Uint(b []byte, f Field) (uint64, bool) {
	if f.Size == 0 || f.Size > 8 || f.Offset+f.Size > len(b) {
		return 0, false
	}
	var buf [8]byte
	copy(buf[:], b[f.Offset:f.Offset+f.Size])
	return binary.LittleEndian.Uint64(buf[:]), true
}

// PutUint writes an unsigned member of up to 8 bytes.
func PutUint(b []byte, f Field, v uint64) bool {
	if f.Size == 0 || f.Size > 8 || f.Offset+f.Size > len(b) {
		return false
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	copy(b[f.Offset:f.Offset+f.Size], buf[:f.Size])
	return true
}

var arrayRe = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// Format renders a member's value: signed or unsigned integers in decimal,
// pointers in hex, arrays of integers element by element, anything
// else as hex bytes.
func Format(b []byte, f Field) string {
	if f.Offset+f.Size > len(b) {
		return "(not recorded)"
	}
	if f.Size == 0 {
		return "(flexible array)"
	}
	if m := arrayRe.FindStringSubmatch(f.CType); m != nil {
		if elem, ok := scalarSizes[strings.TrimSpace(m[1])]; ok && elem > 1 {
			var parts []string
			for off := f.Offset; off+elem <= f.Offset+f.Size; off += elem {
				parts = append(parts, Format(b, Field{Offset: off, Size: elem, CType: strings.TrimSpace(m[1])}))
			}
			return "[" + strings.Join(parts, " ") + "]"
		}
	}
	v, ok := Uint(b, f)
	if !ok {
		return fmt.Sprintf("%x", b[f.Offset:f.Offset+f.Size])
	}
	switch {
	case f.Pointer():
		return fmt.Sprintf("%#x", v)
	case strings.HasPrefix(f.CType, "__s") || f.CType == "int" || f.CType == "pid_t":
		shift := 64 - 8*f.Size
		return fmt.Sprint(int64(v<<shift) >> shift)
	}
	return fmt.Sprint(v)
}
