package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/ioctl"
)

// variant is one encoding of a macro and the versions that have it: a
// macro whose value, struct, lane, gate or match rule changed between
// versions has one variant per change.
type variant struct {
	cmd      *ioctl.Command
	versions []ioctl.DriverVersion
}

// entry is one macro across every emulated version.
type entry struct {
	macro    ioctl.Macro
	name     string
	variants []variant
	emulated bool
}

// abi is the whole description, read once: the versions oldest first
// and every macro that any of them has.
type abi struct {
	versions []ioctl.DriverVersion
	tables   map[ioctl.DriverVersion]*ioctl.Table
	entries  map[ioctl.Macro]*entry
	// structs are the versions in which any command takes each argument
	// layout (a tag and a size: a struct that grew keeps its tag).
	structs map[layoutKey][]ioctl.DriverVersion
}

type layoutKey struct {
	name string
	size int
}

func loadABI() (*abi, error) {
	a := &abi{tables: map[ioctl.DriverVersion]*ioctl.Table{}, entries: map[ioctl.Macro]*entry{}, structs: map[layoutKey][]ioctl.DriverVersion{}}
	names := ioctl.Versions()
	slices.Reverse(names) // oldest first, the order a reader follows changes in
	for _, n := range names {
		t, err := ioctl.ForVersion(n)
		if err != nil {
			return nil, err
		}
		a.versions = append(a.versions, t.Version)
		a.tables[t.Version] = t
		for _, c := range t.Commands() {
			a.add(t.Version, c)
		}
	}
	return a, nil
}

func (a *abi) add(v ioctl.DriverVersion, c *ioctl.Command) {
	if l := c.Layout; l != nil && l.Type != nil {
		k := layoutKey{l.Name, l.Size}
		if !slices.Contains(a.structs[k], v) {
			a.structs[k] = append(a.structs[k], v)
		}
	}
	e := a.entries[c.Macro]
	if e == nil {
		e = &entry{macro: c.Macro, name: c.Name, emulated: device.Emulated(c.Macro)}
		a.entries[c.Macro] = e
	}
	key := strings.Join(factCells(c), "|")
	for i := range e.variants {
		if strings.Join(factCells(e.variants[i].cmd), "|") == key {
			e.variants[i].versions = append(e.variants[i].versions, v)
			return
		}
	}
	e.variants = append(e.variants, variant{cmd: c, versions: []ioctl.DriverVersion{v}})
}

// check proves the family table is a partition of the macros the
// versions have: each on exactly one page, none listed that no version has.
func (a *abi) check() error {
	seen := map[ioctl.Macro]string{}
	var errs []string
	for _, f := range families {
		for _, m := range f.macros {
			if other, dup := seen[m]; dup {
				errs = append(errs, fmt.Sprintf("%s is on pages %s and %s", m, other, f.slug))
			}
			seen[m] = f.slug
			if a.entries[m] == nil {
				errs = append(errs, fmt.Sprintf("%s (page %s) is in no emulated version", m, f.slug))
			}
		}
	}
	for m, e := range a.entries {
		if _, ok := seen[m]; !ok {
			errs = append(errs, fmt.Sprintf("%s is on no page: add it to a family in families.go", e.name))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("docgen: %s", strings.Join(errs, "; "))
	}
	return nil
}

// versionRange says which versions have a variant, as runs over the
// ordered version list, so a reader sees at once where a value started
// or stopped.
func (a *abi) versionRange(vs []ioctl.DriverVersion) string {
	if len(vs) == len(a.versions) {
		return "all"
	}
	has := map[ioctl.DriverVersion]bool{}
	for _, v := range vs {
		has[v] = true
	}
	var runs []string
	for i := 0; i < len(a.versions); {
		if !has[a.versions[i]] {
			i++
			continue
		}
		j := i
		for j+1 < len(a.versions) && has[a.versions[j+1]] {
			j++
		}
		first, last := a.versions[i].String(), a.versions[j].String()
		switch {
		case i == j:
			runs = append(runs, first)
		case j == len(a.versions)-1:
			runs = append(runs, first+" and later")
		case i == 0:
			runs = append(runs, "up to "+last)
		default:
			runs = append(runs, first+"–"+last)
		}
		i = j + 1
	}
	return strings.Join(runs, ", ")
}
