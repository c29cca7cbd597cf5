package seq

import "testing"

// The dispatch table and the opcode table agree on which opcodes are
// computed.
func TestComputeOpsClassified(t *testing.T) {
	for op := range 256 {
		_, h := computeOps[Opcode(op)]
		if c := Opcode(op).Class(); (c == ClassCompute) != h {
			t.Errorf("%v: class %d, handler %v", Opcode(op), c, h)
		}
	}
}

// Real opcodes of the header's roster whose layout is not read (0x82..0x9F:
// AFFINE_SELECT, STT, ...) are counted as not emulated, not faulted.
func TestRosterOpcodesCounted(t *testing.T) {
	for _, op := range []Opcode{0x82, 0x92, 0x98, 0x99, 0x9D, 0x9F} {
		c := newCore(t)
		if r := c.run1(DVE, NewRecord(op)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%v: %+v", op, r)
		}
	}
}
