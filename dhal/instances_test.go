package dhal

import (
	"slices"
	"strings"
	"testing"
)

func mustInstance(t *testing.T, name string) *Instance {
	t.Helper()
	in, err := LookupInstance(name)
	if err != nil {
		t.Fatalf("LookupInstance(%q): %v", name, err)
	}
	return in
}

func TestInstanceProfiles(t *testing.T) {
	want := map[string]struct {
		product  string
		devices  int
		platform Platform
	}{
		"trn1.2xlarge":     {"Trn1", 1, PlatformStandard},
		"trn1.32xlarge":    {"Trn1", 16, PlatformStandard},
		"trn1n.32xlarge":   {"Trn1", 16, PlatformStandard},
		"inf2.xlarge":      {"Inf2", 1, PlatformStandard},
		"inf2.8xlarge":     {"Inf2", 1, PlatformStandard},
		"inf2.24xlarge":    {"Inf2", 6, PlatformStandard},
		"inf2.48xlarge":    {"Inf2", 12, PlatformStandard},
		"trn2.3xlarge":     {"Trn2", 1, PlatformStandard},
		"trn2.48xlarge":    {"Trn2", 16, PlatformStandard},
		"trn2u.48xlarge":   {"Trn2", 16, PlatformUltraServer},
		"trn3.48xlarge":    {"Trn3", 16, PlatformStandard},
		"trn3s.48xlarge":   {"Trn3", 16, PlatformPDS},
		"trn3pd98.3xlarge": {"Trn3", 1, PlatformStandard},
	}
	names := InstanceNames()
	if !slices.IsSortedFunc(names, CompareInstanceNames) || len(names) != len(want) {
		t.Fatalf("InstanceNames() = %v", names)
	}
	for _, name := range names {
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected profile %q", name)
			continue
		}
		in := mustInstance(t, name)
		if in.Name != name || in.Product.Name != w.product || in.Devices != w.devices || in.Platform != w.platform {
			t.Errorf("%s: got %s/%d/%v, want %+v", name, in.Product.Name, in.Devices, in.Platform, w)
		}
		if in.Platform != PlatformFor(in.Arch(), name) {
			t.Errorf("%s: platform disagrees with PlatformFor", name)
		}
		if len(in.BDFs) != in.Devices {
			t.Errorf("%s: %d BDFs for %d devices", name, len(in.BDFs), in.Devices)
		}
		seen := map[BDF]bool{}
		for _, b := range in.BDFs {
			if seen[b] {
				t.Errorf("%s: duplicate BDF %v", name, b)
			}
			seen[b] = true
		}
	}
}

func TestLookupInstanceUnknown(t *testing.T) {
	_, err := LookupInstance("p5.48xlarge")
	if err == nil || !strings.Contains(err.Error(), "trn2.48xlarge") {
		t.Errorf("error should list known names, got %v", err)
	}
}

func TestKnownBDFs(t *testing.T) {
	checks := map[string][]string{
		"trn1.2xlarge":  {"0000:00:1e.0"},
		"trn1.32xlarge": {"0000:10:1c.0", "0000:10:1d.0", "0000:a0:1c.0"},
		"inf2.8xlarge":  {"0000:00:1f.0"},
		"inf2.48xlarge": {"0000:80:1e.0", "0000:90:1e.0"},
		"trn2.48xlarge": {"0000:cc:00.0", "0000:b5:00.0", "0000:b6:00.0", "0000:cb:00.0"},
	}
	for name, w := range checks {
		in := mustInstance(t, name)
		for i, s := range w {
			if got := in.BDFs[i].String(); got != s {
				t.Errorf("%s device %d: %s, want %s", name, i, got, s)
			}
		}
	}
}

func TestPlatformRules(t *testing.T) {
	cases := []struct {
		a    Arch
		name string
		want Platform
	}{
		{V2, "trn2u.48xlarge", PlatformStandard}, // V2 never detects a platform
		{V3, "trn2.48xlarge", PlatformStandard},
		{V3, "trn2u.48xlarge", PlatformUltraServer},
		{V3, "trn2p.48xlarge", PlatformUltraServer},
		{V3, "trn2eu.48xlarge", PlatformUltraServer},
		{V3, "trn2u-ac.24xlarge", PlatformUltraServer},
		{V3, "trn2u.48xlarge\n", PlatformUltraServer}, // DMI files end in a newline; prefix match
		{V3, "trn2es.48xlarge", PlatformPDS},
		{V3, "trn3s.48xlarge", PlatformStandard},
		{V4, "trn3s.48xlarge", PlatformPDS},
		{V4, "trn3-dev0.48xlarge", PlatformPDS},
		{V4, "trn3-dev0.48xlXYZ", PlatformPDS}, // only 14 characters are compared
		{V4, "trn3-dev1.48xlarge", PlatformStandard},
		{V4, "trn2u.48xlarge", PlatformStandard}, // V4 has no UltraServer names
		{V4, "trn3.48xlarge", PlatformStandard},
		{V4, "", PlatformStandard},
	}
	for _, c := range cases {
		if got := PlatformFor(c.a, c.name); got != c.want {
			t.Errorf("PlatformFor(%v, %q) = %v, want %v", c.a, c.name, got, c.want)
		}
	}
	if PlatformWithForce(V3, "trn2.48xlarge", true) != PlatformUltraServer {
		t.Error("force_userver should select UltraServer on V3")
	}
	if PlatformWithForce(V4, "trn3.48xlarge", true) != PlatformStandard {
		t.Error("force_userver has no effect on V4")
	}
}

func TestWithDevices(t *testing.T) {
	in := mustInstance(t, "trn1.32xlarge")
	one, err := in.WithDevices(1)
	if err != nil || one.Devices != 1 || len(one.BDFs) != 1 || one.BDFs[0] != in.BDFs[0] {
		t.Fatalf("WithDevices(1) = %+v, %v", one, err)
	}
	big, err := in.WithDevices(64)
	if err != nil || big.Devices != 64 || len(big.BDFs) != 64 {
		t.Fatalf("WithDevices(64) = %+v, %v", big, err)
	}
	seen := map[BDF]bool{}
	for _, b := range big.BDFs {
		if seen[b] {
			t.Errorf("duplicate BDF %v", b)
		}
		seen[b] = true
	}
	again, _ := in.WithDevices(64)
	for i := range big.BDFs {
		if big.BDFs[i] != again.BDFs[i] {
			t.Fatal("WithDevices is not deterministic")
		}
	}
	big.BDFs[0] = BDF{}
	big.Product.Name = "x"
	if in.BDFs[0].String() != "0000:10:1c.0" || in.Product.Name != "Trn1" {
		t.Error("WithDevices result shares memory with its source")
	}
	for _, n := range []int{0, 65} {
		if _, err := in.WithDevices(n); err == nil {
			t.Errorf("WithDevices(%d) should fail", n)
		}
	}
	if _, err := mustInstance(t, "trn2.48xlarge").WithDevices(17); err == nil {
		t.Error("V3 cannot number more than 16 devices")
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	a := mustInstance(t, "inf2.48xlarge")
	a.BDFs[0] = BDF{}
	a.Product.DeviceName = "x"
	b := mustInstance(t, "inf2.48xlarge")
	if b.BDFs[0].String() != "0000:80:1e.0" || b.Product.DeviceName != "Inferentia2" {
		t.Error("LookupInstance results share memory")
	}
}

func TestSerialNumbers(t *testing.T) {
	for _, name := range InstanceNames() {
		in := mustInstance(t, name)
		seen := map[uint64]bool{}
		for i := 0; i < in.Devices; i++ {
			s := in.SerialNumber(i)
			if s == 0 || seen[s] {
				t.Errorf("%s device %d: serial %016x zero or duplicate", name, i, s)
			}
			seen[s] = true
			if s != in.SerialNumber(i) {
				t.Errorf("%s: serial not deterministic", name)
			}
		}
	}
}
