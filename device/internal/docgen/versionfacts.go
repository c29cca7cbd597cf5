package main

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/neuronfs/neuronfs/ioctl"
)

// versionFacts renders what each version reports about itself and the
// behaviour changes handlers ask it about, from ioctl's one table of
// version facts, so the notes need not restate them.
func (a *abi) versionFacts(b *bytes.Buffer) {
	b.WriteString("## What each version reports and changes\n\n")
	b.WriteString("From `ioctl/versions.go`, where a version states only what differs from its parent. The behaviour changes are the fields of `ioctl.Quirks` (each documented there) that a version turns on against the row before; every version below it in the table keeps them.\n\n")
	row(b, []string{"driver version", "DRIVER_INFO feature_flags1", "COMPATIBLE_VERSION {min, max}", "behaviour changes"})
	row(b, []string{"---", "---", "---", "---"})
	var prev []string
	for _, v := range a.versions {
		t := a.tables[v]
		var compat, features []string
		for _, arch := range slices.Sorted(maps.Keys(t.Compat)) {
			r := t.Compat[arch]
			compat = append(compat, fmt.Sprintf("V%d %d–%d", arch, r[0], r[1]))
			if f := t.FeaturesFor(arch); f != t.Features {
				features = append(features, fmt.Sprintf("V%d: %#x", arch, f))
			}
		}
		feat := fmt.Sprintf("%#x", t.Features)
		if len(features) > 0 {
			feat += " (" + strings.Join(features, ", ") + ")"
		}
		quirks := quirkNames(t.Quirks)
		var added []string
		for _, q := range quirks {
			if !slices.Contains(prev, q) {
				added = append(added, "`"+q+"`")
			}
		}
		prev = quirks
		row(b, []string{v.String(), feat, strings.Join(compat, ", "), list(added)})
	}
	b.WriteString("\n")
}

// quirkNames lists the quirks q has on, in field order.
func quirkNames(q ioctl.Quirks) []string {
	var out []string
	v := reflect.ValueOf(q)
	for i := range v.NumField() {
		if v.Field(i).Bool() {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}
