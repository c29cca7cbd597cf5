package device

import (
	"reflect"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// A core whose engines only counted records gets a NOT EMULATED line in
// the cores file and compute counts in the state, with each engine's
// latest such record; a core that computed everything gets neither.
func TestNotEmulatedReported(t *testing.T) {
	skipped := &seq.Skipped{PC: 0x1040, Op: seq.OpMatmulSparse, Why: seq.WhyNoSource}
	engines := []chip.EngineReport{
		{Status: seq.Status{Engine: seq.PE, State: seq.Halted, PC: 0x1080}, Counts: seq.Counts{Records: 4, NotEmulated: 1, LastNotEmulated: skipped}},
		{Status: seq.Status{Engine: seq.ACT, State: seq.Halted, PC: 0x2040}, Counts: seq.Counts{Records: 3}},
	}
	var b strings.Builder
	writeCore(&b, "neuron0", 1, engines, false)
	want := "  NOT EMULATED: 1 of 7 records were only counted; their results were not computed\n" +
		"    last on PE: MATMUL_SPARSE(0x07) at 0x1040: no source gives its effect\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("cores file:\n%s\nwant it to end:\n%s", b.String(), want)
	}
	cs := computeOf(engines)
	if !reflect.DeepEqual(cs, ComputeState{Records: 7, NotEmulated: 1, Last: []SkippedRecord{
		{Engine: "PE", PC: "0x1040", Opcode: "0x07", Name: "MATMUL_SPARSE", Why: seq.WhyNoSource}}}) {
		t.Errorf("compute state %+v", cs)
	}

	engines[0].Counts = seq.Counts{Records: 4}
	b.Reset()
	writeCore(&b, "neuron0", 1, engines, false)
	if strings.Contains(b.String(), "NOT EMULATED") {
		t.Errorf("a core that computed everything:\n%s", b.String())
	}
	if cs := computeOf(engines); cs.NotEmulated != 0 || len(cs.Last) != 0 || cs.Records != 7 {
		t.Errorf("compute state %+v", cs)
	}
}
