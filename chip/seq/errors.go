package seq

import (
	"errors"
	"fmt"
)

// Why an engine stops on a record. They match the load-time validators'
// structural rules where those exist; the rest are what this package
// cannot follow.
var (
	ErrShort         = errors.New("record shorter than 64 bytes")
	ErrUnknownOpcode = errors.New("unknown opcode")
	ErrPseudoOpcode  = errors.New("host-only pseudo opcode")
	ErrWordLen       = errors.New("inst_word_len is not 16")
	ErrEvents        = errors.New("unsupported events mode")
	ErrBranchTarget  = errors.New("branch target outside the image")
	ErrRunOff        = errors.New("ran past the end of the image")
	ErrUnsupported   = errors.New("operand form not emulated")
	ErrFetch         = errors.New("instruction fetch failed")
	ErrCSR           = errors.New("CSR write failed")
	ErrOperand       = errors.New("operand the validators reject")
	ErrAperture      = errors.New("address outside the on-chip memory")
)

// Fault is what stopped an engine on garbage: where, on which record, and
// why (errors.Is matches the reasons above).
type Fault struct {
	Engine Engine
	PC     uint64 // device address of the record
	Opcode Opcode
	Err    error
}

func (f *Fault) Error() string {
	return fmt.Sprintf("%v engine stopped at %#x on %v: %v", f.Engine, f.PC, f.Opcode, f.Err)
}

func (f *Fault) Unwrap() error { return f.Err }

// ErrorID is the NEURON_ISA_TPB_ERROR_TYPE a fault reports in its ERROR
// record: every structural fault is fatal to the engine.
const ErrorIDSequencerFatal = 0x0A
