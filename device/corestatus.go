package device

import (
	"fmt"
	"strings"

	"github.com/neuronfs/neuronfs/chip"
)

// CoresFile is the control file (under neuronfs/ at the mount root) that
// shows what each core's engines are doing with a staged program: where
// each one is, what it waits for, and how many records it issued and how
// many of those only had their events honoured (arithmetic that is not
// emulated), and under a core that only counted some records, a NOT
// EMULATED line with each engine's latest such record, so nobody trusts
// results the emulator did not compute. A core whose every running engine waits, with no DMA of the
// core moving, is marked blocked (chip.Core.Blocked), the hang a device
// can only time out on; a run ended for waiting on what neuronfs does
// not emulate (chip/hangend.go) says so under its core. Per device it also counts and places, by page,
// the BAR0 words no block models and no memory backs (kept as plain
// registers): what the runtime touched that the emulator does not
// understand. The driver has no such file.
const CoresFile = "cores"

// coresStatus renders CoresFile: one block per core that has run a
// program, none for cores that only gave the semantic answer.
func (fs Sysfs) coresStatus() string {
	s := fs.s
	var b strings.Builder
	for _, d := range s.Devices {
		for nc := 0; nc < s.Arch.CoresPerDevice && nc < maxCoreSlots; nc++ {
			core := d.chip.Core(nc)
			_, blocked := core.Blocked()
			writeCore(&b, d.Name(), nc, core.EngineReports(), blocked)
			if ended := core.EndedHang(); ended != "" {
				// Under the core's block: a core's lines are indented.
				fmt.Fprintf(&b, "  run ended, nothing emulated answers its waits: %s\n", ended)
			}
		}
		writeUnmodelled(&b, d.Name(), d.chip.BAR0())
	}
	return b.String()
}

func writeCore(b *strings.Builder, dev string, nc int, engines []chip.EngineReport, blocked bool) {
	if len(engines) == 0 {
		return
	}
	state := ""
	if blocked {
		state = " blocked: every running engine waits"
	}
	fmt.Fprintf(b, "%s core %d:%s\n", dev, nc, state)
	for _, e := range engines {
		by := ""
		if e.By != "" {
			by = " (started by " + e.By + ")"
		}
		if e.Awaits != "" {
			by += ", awaits " + e.Awaits + ": not emulated, nothing answers"
		}
		fmt.Fprintf(b, "  %v%s; records=%d not_emulated=%d waits=%d\n",
			e.Status, by, e.Counts.Records, e.Counts.NotEmulated, e.Counts.Waits)
	}
	writeNotEmulated(b, computeOf(engines))
}

// writeNotEmulated warns under a core whose engines only counted some
// records: their outputs hold what memory held before.
func writeNotEmulated(b *strings.Builder, cs ComputeState) {
	if cs.NotEmulated == 0 {
		return
	}
	fmt.Fprintf(b, "  NOT EMULATED: %d of %d records were only counted; their results were not computed\n", cs.NotEmulated, cs.Records)
	for _, l := range cs.Last {
		fmt.Fprintf(b, "    last on %s: %s(%s) at %s: %s\n", l.Engine, l.Name, l.Opcode, l.PC, l.Why)
	}
}
