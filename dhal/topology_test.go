package dhal

import (
	"reflect"
	"testing"
)

func TestNeighbourCounts(t *testing.T) {
	want := map[string][]int{ // neighbour count per device index
		"trn1.2xlarge":  {0},
		"inf2.xlarge":   {0},
		"inf2.24xlarge": {1, 2, 2, 2, 2, 1},
		"inf2.48xlarge": {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
		"trn2.3xlarge":  {0},
	}
	for name, w := range want {
		in := mustInstance(t, name)
		for i, n := range w {
			if got := len(in.Neighbours(i)); got != n {
				t.Errorf("%s device %d: %d neighbours, want %d", name, i, got, n)
			}
		}
	}
	for _, name := range []string{"trn1.32xlarge", "trn2.48xlarge", "trn2u.48xlarge", "trn3.48xlarge", "trn3s.48xlarge"} {
		in := mustInstance(t, name)
		for i := 0; i < in.Devices; i++ {
			if len(in.Neighbours(i)) != 4 {
				t.Errorf("%s device %d: %v", name, i, in.Neighbours(i))
			}
		}
	}
	in := mustInstance(t, "trn1.32xlarge")
	if in.Neighbours(-1) != nil || in.Neighbours(16) != nil {
		t.Error("out-of-range index should have no neighbours")
	}
}

func TestNeighbourValues(t *testing.T) {
	checks := []struct {
		name  string
		index int
		want  []uint32
	}{
		{"trn1.32xlarge", 0, []uint32{12, 3, 4, 1}}, // matches public neuron-ls output
		{"trn1.32xlarge", 15, []uint32{11, 14, 3, 12}},
		{"trn2.48xlarge", 0, []uint32{12, 1, 3, 4}},
		{"trn2.48xlarge", 8, []uint32{4, 9, 11, 12}},
		{"inf2.48xlarge", 0, []uint32{11, 1}},
		{"inf2.24xlarge", 5, []uint32{4}},
	}
	for _, c := range checks {
		if got := mustInstance(t, c.name).Neighbours(c.index); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s device %d: %v, want %v", c.name, c.index, got, c.want)
		}
	}
	// Second group of 16: bit 4 of the index is OR'ed in.
	in, _ := mustInstance(t, "trn1.32xlarge").WithDevices(32)
	if got := in.Neighbours(16); !reflect.DeepEqual(got, []uint32{28, 19, 20, 17}) {
		t.Errorf("trn1 x32 device 16: %v", got)
	}
}

func checkSymmetric(t *testing.T, in *Instance) {
	t.Helper()
	for i := 0; i < in.Devices; i++ {
		for _, j := range in.Neighbours(i) {
			if int(j) >= in.Devices || int(j) == i {
				t.Errorf("%s(%d): device %d lists invalid neighbour %d", in.Name, in.Devices, i, j)
				continue
			}
			found := false
			for _, k := range in.Neighbours(int(j)) {
				found = found || int(k) == i
			}
			if !found {
				t.Errorf("%s(%d): %d lists %d but not the reverse", in.Name, in.Devices, i, j)
			}
		}
	}
}

func TestNeighboursSymmetric(t *testing.T) {
	for _, name := range InstanceNames() {
		checkSymmetric(t, mustInstance(t, name))
	}
	in, _ := mustInstance(t, "trn1.32xlarge").WithDevices(32)
	checkSymmetric(t, in)
}

func isPermutation(vals []uint32, base uint32) bool {
	seen := make(map[uint32]bool, len(vals))
	for _, v := range vals {
		if v < base || v >= base+uint32(len(vals)) || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func TestRIDMap(t *testing.T) {
	for _, name := range InstanceNames() {
		in := mustInstance(t, name)
		m := in.RIDMap()
		if len(m) != RIDMapEntries {
			t.Fatalf("%s: RIDMap has %d entries", name, len(m))
		}
		if !isPermutation(m[:in.Devices], 0) {
			t.Errorf("%s: RIDMap %v is not a permutation", name, m[:in.Devices])
		}
		for i := 0; i < in.Devices; i++ {
			if in.RoutingID(i) != m[i] {
				t.Errorf("%s: RoutingID(%d)=%d, RIDMap=%d", name, i, in.RoutingID(i), m[i])
			}
		}
		for _, v := range m[in.Devices:] {
			if v != 0 {
				t.Errorf("%s: unused RIDMap entries must be 0", name)
				break
			}
		}
	}
	// Direction: the tables map routing id -> index, the RID map is their inverse.
	trn1 := mustInstance(t, "trn1.32xlarge").RIDMap()
	if trn1[4] != 1 || trn1[1] != 2 || trn1[3] != 4 {
		t.Errorf("trn1 RID map %v", trn1[:16])
	}
	trn2 := mustInstance(t, "trn2.48xlarge").RIDMap()
	if trn2[3] != 1 || trn2[12] != 4 || trn2[1] != 8 {
		t.Errorf("trn2 RID map %v", trn2[:16])
	}
	trn1x64, _ := mustInstance(t, "trn1.32xlarge").WithDevices(64)
	if !isPermutation(trn1x64.RIDMap(), 0) || trn1x64.RoutingID(20) != 16+1 {
		t.Errorf("trn1 x64 RID map %v", trn1x64.RIDMap())
	}
	inf2 := mustInstance(t, "inf2.48xlarge")
	for i := 0; i < inf2.Devices; i++ {
		if inf2.RoutingID(i) != uint32(i) {
			t.Errorf("inf2 routing ids are the identity, got %d for %d", inf2.RoutingID(i), i)
		}
	}
}

func TestRIDMapPDSServerOffset(t *testing.T) {
	in := mustInstance(t, "trn3s.48xlarge")
	in.ServerID = 3
	m := in.RIDMap()
	if !isPermutation(m[:16], 48) {
		t.Errorf("PDS server 3 RID map %v", m[:16])
	}
	for i := 0; i < 16; i++ {
		if in.RoutingID(i) != m[i] || in.RoutingID(i)%16 != uint32(i) {
			t.Errorf("PDS device %d: routing id %d, map %d", i, in.RoutingID(i), m[i])
		}
	}
	if in.RoutingID(5) >= MaxDevicesPDS {
		t.Error("PDS routing id beyond driver limit")
	}
}

func TestZeroRoutingID(t *testing.T) {
	in := mustInstance(t, "trn3pd98.3xlarge")
	if in.RoutingID(0) != 0 || in.RIDMap()[0] != 0 {
		t.Error("trn3pd98.3xlarge forces routing id 0")
	}
}

func TestLogicalToPhysicalNC(t *testing.T) {
	rows := map[[8]uint32][]int{
		{4, 5, 6, 7, 2, 3, 0, 1}: {0, 2, 8, 10},
		{2, 3, 0, 1, 4, 5, 6, 7}: {1, 3, 9, 11},
		{0, 1, 2, 3, 6, 7, 4, 5}: {4, 6, 12, 14},
		{6, 7, 4, 5, 0, 1, 2, 3}: {5, 7, 13, 15},
	}
	for _, a := range []Arch{V3, V4} {
		for row, devs := range rows {
			for _, d := range devs {
				got, err := LogicalToPhysicalNC(a, d, false)
				if err != nil || !reflect.DeepEqual(got, row[:]) {
					t.Errorf("%v device %d: %v, %v; want %v", a, d, got, err, row)
				}
				flipped, _ := LogicalToPhysicalNC(a, d, true)
				for l := range flipped {
					if flipped[l] != row[l^6] {
						t.Errorf("%v device %d flipped: %v", a, d, flipped)
						break
					}
				}
			}
		}
		for d := 0; d < 16; d++ {
			for _, flip := range []bool{false, true} {
				got, _ := LogicalToPhysicalNC(a, d, flip)
				if !isPermutation(got, 0) {
					t.Errorf("%v device %d flip=%v: %v not a permutation of 0..7", a, d, flip, got)
				}
			}
		}
		if _, err := LogicalToPhysicalNC(a, 16, false); err == nil {
			t.Errorf("%v: device 16 should fail", a)
		}
	}
	if _, err := LogicalToPhysicalNC(V2, 0, false); err == nil {
		t.Error("V2 has no NC map")
	}
}

func TestNCMapTable(t *testing.T) {
	if _, err := NCMapTable(V2, false); err == nil {
		t.Error("V2 has no NC map")
	}
	for _, flip := range []bool{false, true} {
		tbl, err := NCMapTable(V4, flip)
		if err != nil || len(tbl) != NCMapEntries {
			t.Fatalf("NCMapTable: %d entries, %v", len(tbl), err)
		}
		for d := 0; d < 16; d++ {
			row, _ := LogicalToPhysicalNC(V4, d, flip)
			for l := 0; l < 8; l++ {
				e := tbl[d*8+l]
				if e.DeviceID != uint32(d) || e.NCIndex != row[l] {
					t.Errorf("flip=%v entry %d = %+v, want {%d %d}", flip, d*8+l, e, d, row[l])
				}
			}
		}
	}
}
