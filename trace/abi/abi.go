// Package abi reads recorded ioctl arguments member by member, so a trace
// can be printed with field names and its user pointers, memory handles,
// addresses and process ids found. Every layout and every member's role
// comes from ioctl's one description (ioctl.Layout): nothing here guesses
// from names.
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

// Struct is the layout of one argument type.
type Struct = ioctl.Layout

// Field is one top-level member of a C struct.
type Field = ioctl.Field

// scalarSizes gives the width of the C scalar types an argument or a
// pointee can have.
var scalarSizes = map[string]int{"__u8": 1, "__s8": 1, "char": 1, "__u16": 2, "__s16": 2, "__u32": 4, "__s32": 4, "int": 4, "pid_t": 4, "__u64": 8, "__s64": 8, "size_t": 8}

// ForCommand returns a command of the table and the layout of its argument.
// ok is false for an unknown command; a known command without an argument,
// or whose struct the driver never defines, has a zero Struct.
func ForCommand(t *ioctl.Table, cmd uint32) (c *ioctl.Command, s Struct, ok bool) {
	c, ok = t.Lookup(cmd)
	if !ok {
		return nil, Struct{}, false
	}
	if c.Layout == nil {
		return c, Struct{}, true
	}
	return c, *c.Layout, true
}

// Nested is a pointer member and how many bytes it points at.
type Nested struct {
	Field Field
	// Len is the size of the buffer for the given struct contents, before
	// the cap; Capped is min(Len, NestedCap).
	Len, Capped int
}

// NestedBuffers lists the pointer members of s whose buffer size is known
// from arg (the struct's bytes): a count member times the element size,
// or the size of the pointee's type.
func NestedBuffers(s Struct, arg []byte) []Nested {
	var out []Nested
	for _, f := range s.Fields {
		if !f.Pointer() {
			continue
		}
		n := BufferLen(s, f, arg)
		if n <= 0 {
			continue
		}
		out = append(out, Nested{Field: f, Len: n, Capped: min(n, NestedCap)})
	}
	return out
}

// BufferLen is the length of a pointer member's buffer for the struct's
// bytes arg, or 0 when the description does not tell.
func BufferLen(s Struct, f Field, arg []byte) int {
	if f.Count == "" {
		return f.Pointee
	}
	count, ok := s.Field(f.Count)
	if !ok {
		return 0
	}
	v, ok := Uint(arg, count)
	if !ok || f.Elem <= 0 || v > 1<<30/uint64(f.Elem) {
		return 0
	}
	return int(v) * f.Elem
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
	case f.Signed():
		shift := 64 - 8*f.Size
		return fmt.Sprint(int64(v<<shift) >> shift)
	}
	return fmt.Sprint(v)
}
