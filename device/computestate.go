package device

import (
	"fmt"

	"github.com/neuronfs/neuronfs/chip"
)

// ComputeState is what a core's engines did with its current (or last)
// staged program and its register-started ones: the records issued and
// how many of them were only counted, their outputs not computed. A
// non-zero NotEmulated means the program's results are not the
// hardware's: nobody should trust them.
type ComputeState struct {
	Records     uint64 `json:"records"`
	NotEmulated uint64 `json:"not_emulated"`
	// Last is, per engine that only counted a record, the latest such
	// record.
	Last []SkippedRecord `json:"not_emulated_last"`
}

// SkippedRecord is one record an engine only counted.
type SkippedRecord struct {
	Engine string `json:"engine"`
	PC     string `json:"pc"`     // the record's device address, hex
	Opcode string `json:"opcode"` // hex
	Name   string `json:"name"`   // the opcode's name, or op0xNN
	Why    string `json:"why"`
}

// computeOf sums a core's engine reports.
func computeOf(engines []chip.EngineReport) ComputeState {
	cs := ComputeState{Last: []SkippedRecord{}}
	for _, e := range engines {
		cs.Records += e.Counts.Records
		cs.NotEmulated += e.Counts.NotEmulated
		if l := e.Counts.LastNotEmulated; l != nil {
			cs.Last = append(cs.Last, SkippedRecord{Engine: e.Status.Engine.String(), PC: fmt.Sprintf("%#x", l.PC),
				Opcode: fmt.Sprintf("%#02x", uint8(l.Op)), Name: l.Op.Name(), Why: l.Why})
		}
	}
	return cs
}
