// Command abigen turns the driver ABI facts into Go, the one description
// every consumer reads: the reference tables of the base driver
// (abi-structs.tsv, abi-ioctls.tsv), each later version's delta in
// versions/<version>/ (the same two tables, for what it adds or changes,
// and a parent file), and the role of each member (abi-roles.tsv). It
// writes one struct type per C struct definition with the padding written
// out, the command numbers, a typed constant per macro, each version's
// command list, and the member layouts with their roles. Generated and
// hand-written code never share a file.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/neuronfs/neuronfs/ioctl/internal/abinames"
)

type field struct {
	name   string
	offset int
	size   int
	ctype  string
	flex   bool // a flexible array member (size 0)
}

type cstruct struct {
	cname  string // "neuron_ioctl_device_info"
	gname  string // its Go type
	size   int
	align  int
	fields []field // top-level members, union members included
	header string
	// flexAlign: a flexible array member gives the C struct the alignment
	// of its elements, which no generated field carries.
	flexAlign bool
}

func main() {
	dir := flag.String("dir", "abi", "directory of the tables")
	base := flag.String("version", "2.25.4.0", "driver version the base tables describe")
	flag.Parse()

	g := &gen{roles: readRoles(filepath.Join(*dir, "abi-roles.tsv"))}
	g.addVersion(*base, "", filepath.Join(*dir, "abi-structs.tsv"), filepath.Join(*dir, "abi-ioctls.tsv"))
	for _, v := range readDeltas(filepath.Join(*dir, "versions"), *base) {
		g.addVersion(v.name, v.parent, filepath.Join(*dir, "versions", v.name, "abi-structs.tsv"), filepath.Join(*dir, "versions", v.name, "abi-ioctls.tsv"))
	}
	writeGo("abi_structs_gen.go", g.genStructs())
	writeGo("abi_commands_gen.go", g.genCommands())
	writeGo("abi_layouts_gen.go", g.genLayouts())
}

func writeGo(path string, src []byte) {
	out, err := format.Source(src)
	if err != nil {
		log.Fatalf("format %s: %v\n%s", path, err, src)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		log.Fatal(err)
	}
}

func readTSV(path string) [][]string {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // a version that adds no structs or no commands
	}
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		rows = append(rows, strings.Split(sc.Text(), "\t"))
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	return rows
}

var typedefRe = regexp.MustCompile(`^(struct|union) (\w+)`)

// CName returns the bare C tag of a "struct x (typedef y)" column.
func cName(col string) string {
	m := typedefRe.FindStringSubmatch(col)
	if m == nil {
		log.Fatalf("bad struct column %q", col)
	}
	return m[2]
}

func readStructs(path string) (map[string]*cstruct, []string) {
	structs := map[string]*cstruct{}
	var order []string
	for _, r := range readTSV(path) {
		name := cName(r[0])
		s := structs[name]
		if s == nil {
			s = &cstruct{cname: name, header: r[5]}
			structs[name] = s
			order = append(order, name)
		}
		if r[1] == "(whole struct)" {
			s.size = atoi(r[3])
			s.align = atoi(strings.TrimPrefix(r[4], "alignof "))
			continue
		}
		// Bit-field members and members of nested structs are checked by
		// the parity test, not generated: the enclosing member covers them.
		if strings.HasPrefix(r[2], "bit ") || strings.Contains(r[1], ".") {
			continue
		}
		// Flexible array members have no size; the handler reads the
		// elements separately.
		if strings.HasPrefix(r[3], "0 (flexible") {
			s.flexAlign = true
			s.fields = append(s.fields, field{name: r[1], offset: atoi(r[2]), ctype: r[4], flex: true})
			continue
		}
		if r[1] == "(padding)" {
			continue
		}
		s.fields = append(s.fields, field{name: r[1], offset: atoi(r[2]), size: atoi(r[3]), ctype: r[4]})
	}
	return structs, order
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		log.Fatalf("atoi %q: %v", s, err)
	}
	return n
}

var arrayRe = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// goType maps a C member type of a known size onto a Go type of that size;
// structs resolves nested struct tags.
func goType(ctype string, size int, structs map[string]*cstruct) string {
	ctype = strings.TrimSpace(ctype)
	if m := arrayRe.FindStringSubmatch(ctype); m != nil {
		n := atoi(m[2])
		return fmt.Sprintf("[%d]%s", n, goType(m[1], size/n, structs))
	}
	if strings.HasSuffix(ctype, "*") {
		return "uint64" // a user-space address
	}
	if strings.HasPrefix(ctype, "struct ") {
		name := strings.TrimPrefix(ctype, "struct ")
		st, ok := structs[name]
		if !ok {
			log.Fatalf("unknown nested struct %q", name)
		}
		return st.gname
	}
	if strings.HasPrefix(ctype, "enum ") {
		return "uint32"
	}
	switch ctype {
	case "__u8", "char":
		return "uint8"
	case "__s8":
		return "int8"
	case "__u16":
		return "uint16"
	case "__u32":
		return "uint32"
	case "__s32", "int", "pid_t":
		return "int32"
	}
	// Remaining scalar types (__u64, size_t, long, typedefs) are unsigned words of their size.
	switch size {
	case 8:
		return "uint64"
	case 4:
		return "uint32"
	}
	log.Fatalf("no Go type for %q (%d bytes)", ctype, size)
	return ""
}

// version is one driver version's facts as read.
type version struct {
	name, parent string
	structs      map[string]*cstruct // definitions visible in this version, by C tag
	defined      []*cstruct          // definitions this version adds or changes
	commands     [][]string          // rows of abi-ioctls.tsv it adds or changes
	removed      []string            // macros of the parent it does not have
}

type role struct{ role, target, count, elem string }

type gen struct {
	versions []*version
	roles    map[[2]string]role // by (C tag or macro, member)
	all      []*cstruct         // every definition, in the order read
}

type delta struct{ name, parent string }

// readDeltas lists the version directories, parents before children.
func readDeltas(dir, base string) []delta {
	ents, err := os.ReadDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	parent := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "parent"))
		if err != nil {
			log.Fatalf("version %s: %v", e.Name(), err)
		}
		parent[e.Name()] = strings.TrimSpace(string(b))
	}
	var out []delta
	done := map[string]bool{base: true}
	for len(out) < len(parent) {
		progress := false
		for _, e := range ents {
			v := e.Name()
			if !done[v] && done[parent[v]] {
				out = append(out, delta{v, parent[v]})
				done[v], progress = true, true
			}
		}
		if !progress {
			log.Fatalf("versions without a known parent in %s", dir)
		}
	}
	return out
}

func readRoles(path string) map[[2]string]role {
	out := map[[2]string]role{}
	for _, r := range readTSV(path) {
		for len(r) < 6 {
			r = append(r, "")
		}
		out[[2]string{r[0], r[1]}] = role{r[2], r[3], r[4], r[5]}
	}
	return out
}

// verSuffix names a version in identifiers: 2.29.0.0 -> 2_29_0_0.
func verSuffix(v string) string { return strings.ReplaceAll(v, ".", "_") }

func (g *gen) addVersion(name, parent, structsPath, ioctlsPath string) {
	v := &version{name: name, parent: parent, structs: map[string]*cstruct{}}
	for _, p := range g.versions {
		if p.name == parent {
			maps.Copy(v.structs, p.structs)
		}
	}
	defs, order := readStructs(structsPath)
	for _, cname := range order {
		d := defs[cname]
		d.gname = abinames.TypeName(cname)
		if _, redefined := v.structs[cname]; redefined || g.taken(d.gname) {
			// A later version changed the struct: its Go mirror is a
			// type of its own, named after the version.
			d.gname += "V" + verSuffix(name)
		}
		v.structs[cname] = d
		v.defined = append(v.defined, d)
		g.all = append(g.all, d)
	}
	v.commands = readTSV(ioctlsPath)
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(ioctlsPath), "removed")); err == nil && parent != "" {
		v.removed = strings.Fields(string(b))
	}
	g.versions = append(g.versions, v)
}

func (g *gen) taken(gname string) bool {
	for _, d := range g.all {
		if d.gname == gname {
			return true
		}
	}
	return false
}

func (g *gen) genStructs() []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by ioctl/internal/abigen from ioctl/abi (abi-structs.tsv and the versions' deltas). DO NOT EDIT.\n\n")
	b.WriteString("package ioctl\n\nimport \"reflect\"\n\n")
	defs := slices.Clone(g.all)
	sort.SliceStable(defs, func(i, j int) bool { return defs[i].gname < defs[j].gname })
	for _, s := range defs {
		fmt.Fprintf(&b, "// %s mirrors C %s (%d bytes, %s).\n", s.gname, s.cname, s.size, s.header)
		fmt.Fprintf(&b, "type %s struct {\n", s.gname)
		if s.flexAlign {
			fmt.Fprintf(&b, "\t_ [0]uint%d // alignment of the flexible array member\n", 8*s.align)
		}
		structs := g.structsOf(s)
		cur := 0
		for _, f := range s.fields {
			if f.flex || f.offset < cur {
				// Union members overlap; only the first at each offset is
				// kept. Flexible arrays have no storage.
				continue
			}
			if f.offset > cur {
				fmt.Fprintf(&b, "\t_ [%d]byte\n", f.offset-cur)
			}
			fmt.Fprintf(&b, "\t%s %s // %s\n", abinames.GoName(f.name), goType(f.ctype, f.size, structs), f.ctype)
			cur = f.offset + f.size
		}
		if s.size > cur {
			fmt.Fprintf(&b, "\t_ [%d]byte\n", s.size-cur)
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("// cTypes maps each C struct tag of the base driver to its Go mirror.\nvar cTypes = map[string]reflect.Type{\n")
	for _, s := range g.versions[0].defined {
		fmt.Fprintf(&b, "\t%q: reflect.TypeFor[%s](),\n", s.cname, s.gname)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// structsOf returns the definitions visible where s was defined.
func (g *gen) structsOf(s *cstruct) map[string]*cstruct {
	for _, v := range g.versions {
		if slices.Contains(v.defined, s) {
			return v.structs
		}
	}
	return nil
}

var dirs = map[string]string{"none": "DirNone", "R": "DirRead", "W": "DirWrite", "RW": "DirRead | DirWrite"}

// macroConsts lists every macro of every version once, in order.
func (g *gen) macros() []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range g.versions {
		for _, r := range v.commands {
			if !seen[r[0]] {
				seen[r[0]] = true
				out = append(out, r[0])
			}
		}
	}
	return out
}

// cmdConst names a command value: the macro's, with the version for a
// value a later version changed.
func (g *gen) cmdConst(v *version, macro string) string {
	name := "Cmd" + abinames.GoName(strings.TrimPrefix(macro, "NEURON_IOCTL_"))
	for _, w := range g.versions {
		if w == v {
			return name
		}
		for _, r := range w.commands {
			if r[0] == macro {
				return name + "V" + verSuffix(v.name) // defined earlier: this is a change
			}
		}
	}
	return name
}

func (g *gen) genCommands() []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by ioctl/internal/abigen from ioctl/abi (abi-ioctls.tsv and the versions' deltas). DO NOT EDIT.\n\n")
	b.WriteString("package ioctl\n\nimport \"reflect\"\n\n")
	b.WriteString("// Command numbers of every ioctl macro, as each version defines them.\nconst (\n")
	for _, v := range g.versions {
		for _, r := range v.commands {
			fmt.Fprintf(&b, "\t%s uint32 = %s // %s (%s)\n", g.cmdConst(v, r[0]), r[4], r[0], v.name)
		}
	}
	b.WriteString(")\n\n")
	b.WriteString("// The macros of every emulated version: handler keys that a typo cannot miss.\nconst (\n")
	for i, m := range g.macros() {
		if i == 0 {
			fmt.Fprintf(&b, "\t%s Macro = iota + 1\n", macroConst(m))
		} else {
			fmt.Fprintf(&b, "\t%s\n", macroConst(m))
		}
	}
	b.WriteString(")\n\n// macroNames are the C names of the macros.\nvar macroNames = [...]string{\n\t\"\",\n")
	for _, m := range g.macros() {
		fmt.Fprintf(&b, "\t%q,\n", m)
	}
	b.WriteString("}\n\n")
	for _, v := range g.versions {
		fmt.Fprintf(&b, "// commands%s lists the command macros driver %s adds or changes.\n", verSuffix(v.name), v.name)
		fmt.Fprintf(&b, "var commands%s = []Command{\n", verSuffix(v.name))
		for _, r := range v.commands {
			argType, argSize, layout := "nil", "-1", "nil"
			switch {
			case r[5] == "(none)":
				argSize = "0"
			case strings.HasPrefix(r[5], "struct "):
				name := strings.TrimPrefix(r[5], "struct ")
				if s, ok := v.structs[name]; ok {
					argType = fmt.Sprintf("reflect.TypeFor[%s]()", s.gname)
					argSize = strconv.Itoa(s.size)
					layout = "&layout" + s.gname
				}
			default:
				argType = fmt.Sprintf("reflect.TypeFor[%s]()", goType(r[5], atoi(r[6]), v.structs))
				argSize = r[6]
				layout = "&layout" + macroConst(r[0])
			}
			lane := "LaneMain"
			if strings.HasPrefix(r[7], "misc") {
				lane = "LaneMisc"
			}
			byNr := strings.HasPrefix(r[11], "_IOC_NR")
			fmt.Fprintf(&b, "\t{Name: %q, Macro: %s, Cmd: %s, ArgType: %s, ArgSize: %s, Layout: %s, Dir: %s, Lane: %s, AttachGated: %v, MatchByNr: %v, ExactInFamily: %v, SizeSelects: %v},\n",
				r[0], macroConst(r[0]), g.cmdConst(v, r[0]), argType, argSize, layout, dirs[r[2]], lane, r[8] == "yes", byNr,
				byNr && strings.Contains(r[11], "exact cmd"), byNr && strings.Contains(r[11], "selects version"))
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("// versionDeltas is the version tree, parents first: each version is its\n// parent plus the commands it adds or changes, minus those it removes.\nvar versionDeltas = []versionDelta{\n")
	for _, v := range g.versions {
		fmt.Fprintf(&b, "\t{Name: %q, Parent: %q, Added: commands%s", v.name, v.parent, verSuffix(v.name))
		if len(v.removed) > 0 {
			fmt.Fprintf(&b, ", Removed: %#v", v.removed)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func macroConst(macro string) string {
	return "Macro" + abinames.GoName(strings.TrimPrefix(macro, "NEURON_IOCTL_"))
}

var roleConsts = map[string]string{
	"": "RoleValue", "pointer": "RolePointer", "handle": "RoleHandle", "address": "RoleAddress",
	"pid": "RolePID", "bar_address": "RoleBARAddress", "user_address": "RoleUserAddress", "array": "RoleArray", "extent": "RoleExtent",
}

var targetConsts = map[string]string{
	"": "TargetNone", "bytes": "TargetBytes", "handle": "TargetHandle", "address": "TargetAddress",
	"descriptors": "TargetDescriptors", "bar_address": "TargetBARAddress", "fd": "TargetFD",
}

func (g *gen) genLayouts() []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by ioctl/internal/abigen from ioctl/abi (abi-structs.tsv, abi-roles.tsv and the versions' deltas). DO NOT EDIT.\n\n")
	b.WriteString("package ioctl\n\nimport \"reflect\"\n\n")
	used := map[[2]string]bool{}
	for _, s := range g.all {
		structs := g.structsOf(s)
		fmt.Fprintf(&b, "var layout%s = Layout{Name: %q, Type: reflect.TypeFor[%s](), Size: %d, Fields: []Field{\n", s.gname, s.cname, s.gname, s.size)
		for _, f := range s.fields {
			b.WriteString("\t" + g.fieldLit(s.cname, f, structs, used) + ",\n")
		}
		b.WriteString("}}\n\n")
	}
	// Scalar arguments: one member, "value", whose role the roles table
	// gives by macro.
	for _, v := range g.versions {
		for _, r := range v.commands {
			if r[5] == "(none)" || strings.HasPrefix(r[5], "struct ") {
				continue
			}
			n := atoi(r[6])
			fmt.Fprintf(&b, "var layout%s = Layout{Name: %q, Size: %d, Fields: []Field{\n\t%s,\n}}\n\n", macroConst(r[0]), r[5], n,
				g.fieldLit(r[0], field{name: "value", size: n, ctype: r[5]}, v.structs, used))
		}
	}
	b.WriteString("// layouts lists every struct definition's layout.\nvar layouts = []*Layout{\n")
	for _, s := range g.all {
		fmt.Fprintf(&b, "\t&layout%s,\n", s.gname)
	}
	b.WriteString("}\n")
	for k := range g.roles {
		if !used[k] {
			log.Fatalf("abi-roles.tsv: %s.%s names no member", k[0], k[1])
		}
	}
	return b.Bytes()
}

// fieldLit renders one member with its role: the roles table's, else a
// pointer for a C pointer, else a plain value.
func (g *gen) fieldLit(owner string, f field, structs map[string]*cstruct, used map[[2]string]bool) string {
	r, ok := g.roles[[2]string{owner, f.name}]
	if ok {
		used[[2]string{owner, f.name}] = true
	} else if strings.HasSuffix(strings.TrimSpace(f.ctype), "*") {
		r = role{role: "pointer", target: "bytes"}
	}
	rc, tc := roleConsts[r.role], targetConsts[r.target]
	if rc == "" || tc == "" {
		log.Fatalf("%s.%s: unknown role %q or target %q", owner, f.name, r.role, r.target)
	}
	if (r.role == "pointer") != strings.HasSuffix(strings.TrimSpace(f.ctype), "*") {
		log.Fatalf("%s.%s: role %q on a %q member", owner, f.name, r.role, f.ctype)
	}
	lit := fmt.Sprintf("{Name: %q, Offset: %d, Size: %d, CType: %q, Role: %s", f.name, f.offset, f.size, f.ctype, rc)
	if r.target != "" {
		lit += ", Target: " + tc
	}
	if r.count != "" {
		lit += fmt.Sprintf(", Count: %q, Elem: %d", r.count, atoiOr(r.elem, 0))
	}
	if n := g.pointeeSize(f, structs); n > 0 && r.role == "pointer" && r.count == "" {
		lit += fmt.Sprintf(", Pointee: %d", n)
	}
	if elem := elemStruct(f.ctype); elem != "" {
		if s, ok := structs[elem]; ok {
			lit += ", ElemLayout: &layout" + s.gname
		}
	}
	return lit + "}"
}

func atoiOr(s string, def int) int {
	if s == "" {
		return def
	}
	return atoi(s)
}

var scalarSizes = map[string]int{"__u8": 1, "__s8": 1, "char": 1, "__u16": 2, "__s16": 2, "__u32": 4, "__s32": 4, "int": 4, "pid_t": 4, "__u64": 8, "__s64": 8, "size_t": 8}

// pointeeSize is the size of what a pointer member points at, when its
// type says (a struct or a scalar); 0 for void and char buffers.
func (g *gen) pointeeSize(f field, structs map[string]*cstruct) int {
	p := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f.ctype), "*"))
	p = strings.TrimPrefix(p, "const ")
	p = strings.TrimPrefix(p, "struct ")
	if s, ok := structs[p]; ok {
		return s.size
	}
	if s, ok := structs[strings.TrimSuffix(p, "_t")]; ok {
		return s.size
	}
	return scalarSizes[p]
}

// elemStruct returns the element struct of an array member, or "".
func elemStruct(ctype string) string {
	m := arrayRe.FindStringSubmatch(strings.TrimSpace(ctype))
	if m == nil {
		if strings.HasSuffix(ctype, "[]") {
			m = []string{"", strings.TrimSuffix(ctype, "[]")}
		} else {
			return ""
		}
	}
	return strings.TrimPrefix(strings.TrimSpace(m[1]), "struct ")
}
