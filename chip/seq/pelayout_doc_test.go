package seq

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// peDocRows names, for each row of docs/isa.md's per-generation PE table,
// the peLayout fields its cells give ("a / b" cells give two).
var peDocRows = map[string][]string{
	"MATMUL moving source (TENSOR3D)":                 {"mmSrc"},
	"MATMUL `in_dtype` / `fp32_mode`":                 {"mmInDtype", "mmFP32Mode"},
	"MATMUL `transpose_mode`":                         {"mmTranspose"},
	"MATMUL `perf_opt`":                               {"mmPerfOpt"},
	"MATMUL `out_dtype`":                              {"mmOutDtype"},
	"MATMUL `flags` (MATMUL_FLAGS)":                   {"mmFlags"},
	"MATMUL `psum_accumulate_flags`":                  {"mmAccum"},
	"MATMUL `row_grp` / `col_grp`":                    {"mmRowGrp", "mmColGrp"},
	"MATMUL destination (TENSOR3D, PSUM)":             {"mmDst"},
	"LDWEIGHTS source (TENSOR3D)":                     {"lwSrc"},
	"LDWEIGHTS `in_dtype`":                            {"lwInDtype"},
	"LDWEIGHTS `transpose_mode` / `perf_opt`":         {"lwTranspose", "lwPerfOpt"},
	"LDWEIGHTS `num_active_rows` / `num_active_cols`": {"lwRows", "lwCols"},
	"LDWEIGHTS `row_grp` / `col_grp`":                 {"lwRowGrp", "lwColGrp"},
	"LDWEIGHTS `bg_xpose_mode` / `flags`":             {"lwBgXpose", "lwFlags"},
}

// docOffset reads one offset of a PE table cell: "40 (0 or FP32)" is 40,
// "—" (with or without a note) is a field the generation lacks (-1).
func docOffset(cell string) (int, bool) {
	cell, _, _ = strings.Cut(strings.TrimSpace(cell), " (")
	if cell == "—" {
		return -1, true
	}
	n, err := strconv.Atoi(cell)
	return n, err == nil
}

// The per-generation PE layouts (pelayout.go) are the table docs/isa.md
// shows, cell for cell, and the table covers every field.
func TestPELayoutsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/isa.md")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	gens := []Generation{GenV2, GenV3, GenV4}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 5 {
			continue
		}
		fields, ok := peDocRows[strings.TrimPrefix(cells[0], "| ")]
		if !ok {
			continue
		}
		for k, g := range gens {
			parts := strings.Split(cells[1+k], " / ")
			if len(parts) == 1 && len(fields) == 2 {
				parts = append(parts, parts[0]) // "—" for both
			}
			if len(parts) != len(fields) {
				t.Errorf("%s V%d: cell %q for %d fields", cells[0], g, cells[1+k], len(fields))
				continue
			}
			for i, name := range fields {
				want, ok := docOffset(parts[i])
				got := int(reflect.ValueOf(*peLayouts[g]).FieldByName(name).Int())
				if !ok || got != want {
					t.Errorf("V%d %s: table %d, docs/isa.md %q", g, name, got, parts[i])
				}
				covered[name] = true
			}
		}
	}
	typ := reflect.TypeOf(peLayout{})
	for i := range typ.NumField() {
		if !covered[typ.Field(i).Name] {
			t.Errorf("docs/isa.md's PE table has no row for %s", typ.Field(i).Name)
		}
	}
}
