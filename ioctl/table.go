package ioctl

import (
	"fmt"
	"reflect"
	"slices"
)

// Lane says which of the driver's two ioctl entry points serves a command.
type Lane uint8

const (
	// LaneMain commands need a normal (non-O_WRONLY) fd; on a free-access
	// fd they fail with EINVAL.
	LaneMain Lane = iota
	// LaneMisc commands are served on every fd.
	LaneMisc
)

func (l Lane) String() string {
	if l == LaneMisc {
		return "misc"
	}
	return "main"
}

// Command is one ioctl macro of the driver.
type Command struct {
	Name        string       // macro name, e.g. NEURON_IOCTL_DEVICE_INFO
	Macro       Macro        // the same, as a constant
	Cmd         uint32       // full command value
	ArgType     reflect.Type // Go mirror of the argument (nil: none, or never defined)
	ArgSize     int          // sizeof the C argument; 0 none, -1 undefined
	Layout      *Layout      // the argument member by member (nil: none, or never defined)
	Dir         uint32       // _IOC_DIR as encoded (often inverted w.r.t. the data flow)
	Lane        Lane
	AttachGated bool // main lane refuses it with EACCES unless the tgid is attached
	// MatchByNr: the driver routes every command with this _IOC_NR (any
	// type, direction or size) to the handler, which then checks the rest.
	MatchByNr bool
	// ExactInFamily: the family's handler then accepts only the exact
	// values of its members (others check only the size or direction).
	ExactInFamily bool
	// SizeSelects: in a family matched by _IOC_NR, _IOC_SIZE picks the
	// member (any type or direction), and other sizes are EINVAL.
	SizeSelects bool
	// How a command runs (its handler, whether it waits, its budget,
	// whether a transport may serve it inline) is the emulation's, not
	// the ABI's: device/commands.go keeps one row per Macro.
}

// Nr returns the command's _IOC_NR.
func (c *Command) Nr() uint32 { return Nr(c.Cmd) }

// EncodedSize returns the command's _IOC_SIZE, which for most commands is
// the size of a pointer, not of ArgType.
func (c *Command) EncodedSize() uint32 { return Size(c.Cmd) }

// Table is the ABI of one driver version and the facts it reports about
// itself.
type Table struct {
	Version DriverVersion
	// Features is DRIVER_INFO_GET's feature_flags1 (see FeaturesFor).
	Features     uint64
	archFeatures map[uint32]uint64
	// Compat is COMPATIBLE_VERSION's {min, max} per architecture enum;
	// an architecture missing here is not supported by this version.
	Compat map[uint32][2]uint32
	// Quirks are the version's behaviour changes.
	Quirks Quirks

	byCmd map[uint32]*Command
	byNr  map[uint32][]*Command
	all   []*Command
}

// versionDelta is one node of the generated version tree.
type versionDelta struct {
	Name, Parent string
	Added        []Command // commands added or changed (same macro name) against the parent
	Removed      []string  // macro names the parent has and this version does not
}

// newTable builds a version from its parent plus the commands it changes.
func newTable(v versionDelta, parent *Table) *Table {
	// Each fact a version does not state is its parent's: adding a
	// version with an unchanged ABI and behaviour is a one-line parent file.
	f := facts[v.Name]
	t := &Table{Version: mustVersion(v.Name), Features: f.Features, archFeatures: f.ArchFeatures, Compat: f.Compat, Quirks: f.Quirks,
		byCmd: map[uint32]*Command{}, byNr: map[uint32][]*Command{}}
	if parent != nil {
		if t.Features == 0 {
			t.Features = parent.Features
		}
		if t.archFeatures == nil {
			t.archFeatures = parent.archFeatures
		}
		if t.Compat == nil {
			t.Compat = parent.Compat
		}
		t.Quirks = parent.Quirks.with(f.Quirks)
	}
	merged := map[string]Command{}
	var order []string
	if parent != nil {
		for _, c := range parent.all {
			if slices.Contains(v.Removed, c.Name) {
				continue
			}
			merged[c.Name] = *c
			order = append(order, c.Name)
		}
	}
	for _, c := range v.Added {
		if _, ok := merged[c.Name]; !ok {
			order = append(order, c.Name)
		}
		merged[c.Name] = c
	}
	for _, name := range order {
		c := merged[name]
		p := &c
		t.all = append(t.all, p)
		t.byCmd[c.Cmd] = p
		t.byNr[c.Nr()] = append(t.byNr[c.Nr()], p)
	}
	return t
}

var versions = func() map[string]*Table {
	out := map[string]*Table{}
	for _, v := range versionDeltas {
		out[v.Name] = newTable(v, out[v.Parent])
	}
	return out
}()

// Versions lists the emulated driver versions, newest first.
func Versions() []string {
	var vs []DriverVersion
	for _, t := range versions {
		vs = append(vs, t.Version)
	}
	slices.SortFunc(vs, func(a, b DriverVersion) int {
		if b.Less(a) {
			return -1
		}
		if a.Less(b) {
			return 1
		}
		return 0
	})
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

// FeaturesFor is DRIVER_INFO_GET's feature_flags1 on architecture arch.
func (t *Table) FeaturesFor(arch uint32) uint64 {
	if f, ok := t.archFeatures[arch]; ok {
		return f
	}
	return t.Features
}

// ForVersion returns the ABI table of a driver version.
func ForVersion(v string) (*Table, error) {
	t, ok := versions[v]
	if !ok {
		return nil, fmt.Errorf("ioctl: no ABI table for driver version %q (known: %v)", v, Versions())
	}
	return t, nil
}

// Default returns the table of DefaultVersion.
func Default() *Table { return versions[DefaultVersion] }

// Lookup finds a command by its exact value.
func (t *Table) Lookup(cmd uint32) (*Command, bool) {
	c, ok := t.byCmd[cmd]
	return c, ok
}

// ByNr returns the commands sharing an _IOC_NR (size or direction variants).
func (t *Table) ByNr(nr uint32) []*Command { return t.byNr[nr] }

// ByName finds a command by macro name.
func (t *Table) ByName(name string) (*Command, bool) {
	for _, c := range t.all {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// Commands returns every command of the version, in table order.
func (t *Table) Commands() []*Command { return t.all }

// TypeOfC returns the Go mirror of a C struct tag (e.g. "neuron_ioctl_device_info").
func TypeOfC(tag string) (reflect.Type, bool) {
	t, ok := cTypes[tag]
	return t, ok
}
