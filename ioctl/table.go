package ioctl

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	Cmd         uint32       // full command value
	ArgType     reflect.Type // Go mirror of the argument (nil: none, or never defined)
	ArgSize     int          // sizeof the C argument; 0 none, -1 undefined
	Dir         uint32       // _IOC_DIR as encoded (often inverted w.r.t. the data flow)
	Lane        Lane
	AttachGated bool // main lane refuses it with EACCES unless the tgid is attached
	// MatchByNr: the driver routes every command with this _IOC_NR (any
	// type, direction or size) to the handler, which then checks the rest.
	MatchByNr bool
	// ExactInFamily: the family's handler then accepts only the exact
	// values of its members (others check only the size or direction).
	ExactInFamily bool
	// Blocking commands may sleep for long (reset wait, CRWL, scrub, async
	// copy wait): a transport with per-CPU queues must move them off-queue.
	Blocking bool
}

// Nr returns the command's _IOC_NR.
func (c *Command) Nr() uint32 { return Nr(c.Cmd) }

// EncodedSize returns the command's _IOC_SIZE, which for most commands is
// the size of a pointer, not of ArgType.
func (c *Command) EncodedSize() uint32 { return Size(c.Cmd) }

// Table is the ABI of one driver version and the facts it reports about
// itself.
type Table struct {
	Version string
	Parent  *Table
	// Features is DRIVER_INFO_GET's feature_flags1.
	Features uint64
	// Compat is COMPATIBLE_VERSION's {min, max} per architecture enum;
	// an architecture missing here is not supported by this version.
	Compat map[uint32][2]uint32

	byCmd map[uint32]*Command
	byNr  map[uint32][]*Command
	all   []*Command
}

// Version describes one driver version as its parent plus what changed.
type Version struct {
	Name     string
	Parent   string    // "" for the generated base
	Added    []Command // commands added or changed (same macro name) against the parent
	Removed  []string  // macro names the parent has and this version does not
	Features uint64
	Compat   map[uint32][2]uint32 // nil: the parent's
}

// blocking lists the commands whose handlers wait.
var blocking = map[uint32]bool{
	CmdDeviceReady:      true,
	CmdNCResetReady:     true,
	CmdHBMScrubWait:     true,
	CmdCRWLReaderEnter:  true,
	CmdCRWLWriterEnter:  true,
	CmdMemCopyAsyncWait: true,
	CmdCInitSetState:    true,
	CmdMemCopy:          true,
	CmdMemCopy64:        true,
	CmdMemBufCopy:       true,
	CmdMemBufCopy64:     true,
	CmdMemBufZerocopy64: true,
	CmdMemset:           true,
	CmdMemset64:         true,
}

// newTable builds a version from its parent plus the commands it changes.
func newTable(v Version, parent *Table) *Table {
	t := &Table{Version: v.Name, Parent: parent, Features: v.Features, Compat: v.Compat, byCmd: map[uint32]*Command{}, byNr: map[uint32][]*Command{}}
	if t.Compat == nil && parent != nil {
		t.Compat = parent.Compat
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
		c.Blocking = blocking[c.Cmd]
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
	for _, v := range versionTree {
		out[v.Name] = newTable(v, out[v.Parent])
	}
	return out
}()

// Versions lists the emulated driver versions, newest first.
func Versions() []string {
	var out []string
	for _, v := range versionTree {
		out = append(out, v.Name)
	}
	return out
}

// VersionAtLeast reports whether dotted version v is min or newer.
func VersionAtLeast(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := range max(len(a), len(b)) {
		var x, y int
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		if i < len(b) {
			y, _ = strconv.Atoi(b[i])
		}
		if x != y {
			return x > y
		}
	}
	return true
}

// DefaultVersion is the driver version emulated unless asked otherwise.
const DefaultVersion = "2.25.4.0"

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
