package device

import (
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// The cores view names a wait nothing emulated answers, and only that
// engine's.
func TestCoresViewNamesAwaitedActor(t *testing.T) {
	var b strings.Builder
	writeCore(&b, "neuron0", 1, []chip.EngineReport{
		{Status: seq.Status{Engine: seq.POOL, State: seq.Waiting, PC: 0x1040}, Awaits: "Q7 core 2 of NeuronCore 1 (wrote 0x1234)"},
		{Status: seq.Status{Engine: seq.PE, State: seq.Waiting, PC: 0x2000}},
	}, true)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("cores view:\n%s", b.String())
	}
	if !strings.Contains(lines[1], "POOL") || !strings.Contains(lines[1], "awaits Q7 core 2 of NeuronCore 1 (wrote 0x1234): not emulated, nothing answers") {
		t.Errorf("POOL's line does not name its actor: %q", lines[1])
	}
	if strings.Contains(lines[2], "awaits") {
		t.Errorf("PE's line names an actor: %q", lines[2])
	}
}
