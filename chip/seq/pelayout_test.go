package seq

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docs/isa.md's PE table gives every offset each generation's layout
// table holds: a row per field, its V2, V3 and V4 cells rendered from
// peLayouts ("—" for a field the generation lacks).
func TestPELayoutDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/isa.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		label string
		offs  func(l *peLayout) []int
	}{
		{"MATMUL moving source (TENSOR3D)", func(l *peLayout) []int { return []int{l.mmSrc} }},
		{"MATMUL `in_dtype` / `fp32_mode`", func(l *peLayout) []int { return []int{l.mmInDtype, l.mmFP32Mode} }},
		{"MATMUL `transpose_mode`", func(l *peLayout) []int { return []int{l.mmTranspose} }},
		{"MATMUL `perf_opt`", func(l *peLayout) []int { return []int{l.mmPerfOpt} }},
		{"MATMUL `out_dtype`", func(l *peLayout) []int { return []int{l.mmOutDtype} }},
		{"MATMUL `flags` (MATMUL_FLAGS)", func(l *peLayout) []int { return []int{l.mmFlags} }},
		{"MATMUL `psum_accumulate_flags`", func(l *peLayout) []int { return []int{l.mmAccum} }},
		{"MATMUL `row_grp` / `col_grp`", func(l *peLayout) []int { return []int{l.mmRowGrp, l.mmColGrp} }},
		{"MATMUL `psum_zero_region`", func(l *peLayout) []int { return []int{l.mmZeroRegion} }},
		{"MATMUL destination (TENSOR3D, PSUM)", func(l *peLayout) []int { return []int{l.mmDst} }},
		{"LDWEIGHTS source (TENSOR3D)", func(l *peLayout) []int { return []int{l.lwSrc} }},
		{"LDWEIGHTS `in_dtype`", func(l *peLayout) []int { return []int{l.lwInDtype} }},
		{"LDWEIGHTS `transpose_mode` / `perf_opt`", func(l *peLayout) []int { return []int{l.lwTranspose, l.lwPerfOpt} }},
		{"LDWEIGHTS `num_active_rows` / `num_active_cols`", func(l *peLayout) []int { return []int{l.lwRows, l.lwCols} }},
		{"LDWEIGHTS `row_grp` / `col_grp`", func(l *peLayout) []int { return []int{l.lwRowGrp, l.lwColGrp} }},
		{"LDWEIGHTS `bg_xpose_mode` / `flags`", func(l *peLayout) []int { return []int{l.lwBgXpose, l.lwFlags} }},
	}
	gens := []Generation{GenV2, GenV3, GenV4}
	if len(peLayouts) != len(gens) {
		t.Fatalf("%d layout tables, the doc has columns for %d", len(peLayouts), len(gens))
	}
	for _, r := range rows {
		row := "| " + r.label + " |"
		for _, g := range gens {
			var cells []string
			for _, o := range r.offs(peLayouts[g]) {
				if o < 0 {
					cells = append(cells, "—")
				} else {
					cells = append(cells, fmt.Sprint(o))
				}
			}
			row += " " + strings.Join(cells, " / ") + " |"
		}
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/isa.md has no row starting %q", row)
		}
	}
	outs := "| MATMUL output dtypes admitted |"
	for _, g := range gens {
		var names []string
		for _, d := range peLayouts[g].mmOuts {
			if d == 0 {
				names = append(names, "0")
			} else {
				names = append(names, d.String())
			}
		}
		outs += " " + strings.Join(names, ", ") + " |"
	}
	if !strings.Contains(string(doc), outs) {
		t.Errorf("docs/isa.md has no row starting %q", outs)
	}
}
