package ioctl

import (
	"reflect"
	"testing"
)

// Each version has the number of command macros its driver headers
// define, its own feature bits and compat ranges.
func TestVersionTree(t *testing.T) {
	cases := []struct {
		version  string
		macros   int
		features uint64
		v3Compat [2]uint32
		trn3     bool
	}{
		{"2.29.0.0", 109, 0xfff, [2]uint32{10, 11}, true},
		{"2.28.0.0", 107, 0x7ff, [2]uint32{10, 11}, true},
		{"2.27.4.0", 104, 0x1ff, [2]uint32{10, 11}, true},
		{"2.25.4.0", 99, 0x1ff, [2]uint32{10, 11}, true},
		{"2.24.7.0", 94, 0xff, [2]uint32{10, 11}, false},
		{"2.23.9.0", 93, 0x7f, [2]uint32{10, 11}, false},
		{"2.22.2.0", 91, 0x7f, [2]uint32{10, 11}, false},
		{"2.20.28.0", 91, 0x7f, [2]uint32{10, 10}, false},
	}
	for _, c := range cases {
		tab, err := ForVersion(c.version)
		if err != nil {
			t.Fatal(err)
		}
		if len(tab.Commands()) != c.macros || tab.Features != c.features || tab.Compat[archV3] != c.v3Compat || tab.Compat[archV2] != [2]uint32{5, 7} {
			t.Errorf("%s: %d macros, features %#x, compat %v", c.version, len(tab.Commands()), tab.Features, tab.Compat)
		}
		if _, ok := tab.Compat[archV4]; ok != c.trn3 {
			t.Errorf("%s: Trn3 support %v", c.version, ok)
		}
		for _, cmd := range tab.Commands() {
			if got, ok := tab.Lookup(cmd.Cmd); !ok || got.Name != cmd.Name {
				t.Errorf("%s: %s not found by value", c.version, cmd.Name)
			}
		}
	}
	v24, _ := ForVersion("2.24.7.0")
	if c, ok := v24.ByName("NEURON_IOCTL_MEM_BUF_ZEROCOPY64"); !ok || c.Cmd != 0xc0284e7c || c.ArgSize != 40 {
		t.Errorf("2.24 zero copy: %+v", c)
	}
	if _, ok := v24.ByName("NEURON_IOCTL_METRICS_CTRL"); ok {
		t.Error("2.24 has METRICS_CTRL")
	}
	v22, _ := ForVersion("2.22.2.0")
	if _, ok := v22.Lookup(CmdPodCtrlV2); ok {
		t.Error("2.22 has POD_CTRL_V2")
	}
	if _, err := ForVersion("1.0"); err == nil {
		t.Error("unknown version accepted")
	}
}

// A version whose ABI and behaviour are its parent's needs nothing but
// its parent: its table is the parent's under its own name.
func TestVersionWithoutFacts(t *testing.T) {
	parent, _ := ForVersion("2.29.0.0")
	v := newTable(versionDelta{Name: "2.29.1.0", Parent: "2.29.0.0"}, parent)
	if v.Version.String() != "2.29.1.0" || len(v.Commands()) != len(parent.Commands()) || v.Quirks != parent.Quirks ||
		v.FeaturesFor(2) != parent.FeaturesFor(2) || v.FeaturesFor(3) != parent.FeaturesFor(3) || v.Compat[archV3] != parent.Compat[archV3] {
		t.Errorf("2.29.1.0 differs from its parent: %+v", v)
	}
}

// Quirks.with ORs the fields by reflection, which holds only while every
// field is a flag.
func TestQuirksAreFlags(t *testing.T) {
	typ := reflect.TypeFor[Quirks]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() != reflect.Bool {
			t.Errorf("Quirks.%s is a %s, not a flag", f.Name, f.Type)
		}
	}
}

// A version's record is its parent's plus the lines it states: 2.29 keeps
// every quirk of 2.28, turns on its own and nothing else, and its unstated
// facts are 2.28's.
func TestVersionRecordIsParentPlusOwn(t *testing.T) {
	v28, _ := ForVersion("2.28.0.0")
	v29, _ := ForVersion("2.29.0.0")
	own := facts["2.29.0.0"].Quirks
	want := v28.Quirks
	want.CopyInEFAULT, want.HandleErrnos, want.NCMapV1, want.DMABufChecks, want.MarkSizeENXIO = true, true, true, true, true
	if own != (Quirks{CopyInEFAULT: true, HandleErrnos: true, NCMapV1: true, DMABufChecks: true, MarkSizeENXIO: true}) {
		t.Errorf("2.29 states %+v", own)
	}
	if v29.Quirks != want || v29.Quirks != v28.Quirks.with(own) {
		t.Errorf("2.29 quirks %+v, want 2.28's %+v plus its own", v29.Quirks, v28.Quirks)
	}
	if !v28.Quirks.FWFailIsError || !v28.Quirks.AsyncCompletionQueues || !v28.Quirks.BARReadChecked || !v28.Quirks.FWBuildAttr {
		t.Errorf("2.28 lost 2.27's quirks or its own: %+v", v28.Quirks)
	}
	if v29.Compat[archV3] != v28.Compat[archV3] || v29.Compat[archV4] != v28.Compat[archV4] {
		t.Errorf("2.29 compat %v, want 2.28's %v", v29.Compat, v28.Compat)
	}
	if v29.FeaturesFor(archV2) != 0x7ff || v29.FeaturesFor(archV3) != 0xfff {
		t.Errorf("2.29 features %#x on V2, %#x on V3", v29.FeaturesFor(archV2), v29.FeaturesFor(archV3))
	}
	v27, _ := ForVersion("2.27.4.0")
	if v27.Features != 0x1ff || v27.Quirks.FWBuildAttr {
		t.Errorf("2.27: features %#x, quirks %+v", v27.Features, v27.Quirks)
	}
	base, _ := ForVersion(DefaultVersion)
	if base.Quirks != (Quirks{}) {
		t.Errorf("the base version has quirks: %+v", base.Quirks)
	}
}
