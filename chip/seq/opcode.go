package seq

import "fmt"

// Opcode is byte 0 of a record, the discriminant of its payload.
type Opcode uint8

// The opcodes this package names. The control opcodes are interpreted;
// the others are real opcodes whose effect is not emulated.
const (
	OpLdWeights        Opcode = 0x01
	OpMatmul           Opcode = 0x02
	OpMatmulSparse     Opcode = 0x07
	OpMatmulMX         Opcode = 0x0A
	OpActivate         Opcode = 0x21
	OpActivateQuantize Opcode = 0x22
	OpActTableLoad     Opcode = 0x23
	OpActivate2        Opcode = 0x25 // V4+: its source and destination offsets are not read
	OpExponential      Opcode = 0x30
	OpTensorTensor     Opcode = 0x41
	OpTensorScalar     Opcode = 0x43
	OpPool             Opcode = 0x45
	OpCopy             Opcode = 0x46
	OpCast             Opcode = 0x47
	OpRNG              Opcode = 0x4D
	OpBatchNormStats   Opcode = 0x60
	OpGather           Opcode = 0x68
	OpStreamTranspose  Opcode = 0x6B
	OpIota             Opcode = 0x7E
	OpDropout          Opcode = 0x7F
	OpJPEGDecode       Opcode = 0x81
	OpCtrlES           Opcode = 0xA0 // standalone event/semaphore record
	OpHalt             Opcode = 0xA1
	OpDrain            Opcode = 0xA2
	OpNop              Opcode = 0xA4
	OpCtrlWR           Opcode = 0xA5 // CSR write
	OpNotify           Opcode = 0xA6
	OpCtrlAL           Opcode = 0xA8 // register ALU
	OpCtrlBR           Opcode = 0xA9 // compare and branch
	OpTensorLoad       Opcode = 0xAA // TENSOR_LOAD; the runtime's CSR read-back fence is one (tensorload.go)
	OpTensorStore      Opcode = 0xAB
	OpCSRRead                 = OpTensorLoad // the name this package gave 0xAA before the roster settled it
	OpCtrlER           Opcode = 0xB0         // clear a semaphore range
	OpPollSem          Opcode = 0xB3
	OpBranchHint       Opcode = 0xB5
	OpDMAMemcpy        Opcode = 0xB8
	OpDMAIndirect      Opcode = 0xBB
	OpDMATranspose     Opcode = 0xBD
	OpDMADirect2D      Opcode = 0xD4 // pseudo: the runtime lowers it into DMA descriptors
	OpSparsityCompress Opcode = 0xE0
	OpQuantizeMX       Opcode = 0xE3
	OpIndirectCopy     Opcode = 0xE7
	OpExtendedInst     Opcode = 0xF0
	OpInvalid          Opcode = 0xFF
)

// Class says what the sequencer does with an opcode.
type Class uint8

const (
	// ClassUnknown opcodes are not real: the engine stops on them.
	ClassUnknown Class = iota
	// ClassPseudo opcodes are host-only macros the runtime lowers away
	// before staging; one reaching an engine is garbage.
	ClassPseudo
	// ClassControl opcodes are interpreted.
	ClassControl
	// ClassNotEmulated opcodes are real, but no source gives their effect
	// (or their operands): their events tuple is honoured and they are
	// counted.
	ClassNotEmulated
	// ClassCompute opcodes are interpreted in the operand forms the
	// sources give (docs/isa.md); a record in another form is counted as
	// not emulated.
	ClassCompute
)

type opInfo struct {
	name  string
	class Class
}

// named lists the opcodes the wiki names (docs/isa.md gives the page of
// each).
var named = []struct {
	op    Opcode
	name  string
	class Class
}{
	{OpLdWeights, "LDWEIGHTS", ClassCompute},
	{OpMatmul, "MATMUL", ClassCompute},
	{OpMatmulSparse, "MATMUL_SPARSE", ClassNotEmulated},
	{OpMatmulMX, "MATMUL_MX", ClassNotEmulated},
	{OpActivate, "ACTIVATE", ClassCompute},
	{OpActivateQuantize, "ACTIVATE_QUANTIZE", ClassCompute},
	{OpActReadAccumulator, "ACTIVATION_READ_ACCUMULATOR", ClassCompute},
	{OpActTableLoad, "ACTIVATION_TABLE_LOAD", ClassCompute},
	{OpDveReadAccumulator, "DVE_READ_ACCUMULATOR", ClassCompute},
	{OpActivate2, "ACTIVATE2", ClassNotEmulated},
	{OpExponential, "EXPONENTIAL", ClassCompute},
	{OpTensorTensor, "TENSOR_TENSOR_ARITH", ClassCompute},
	{OpTensorTensorBitvec, "TENSOR_TENSOR_BITVEC", ClassCompute},
	{OpTensorScalar, "TENSOR_SCALAR_ARITH", ClassCompute},
	{OpTensorScalarBitvec, "TENSOR_SCALAR_BITVEC", ClassCompute},
	{OpTensorScalarPtr, "TENSOR_SCALAR_PTR_ARITH", ClassCompute},
	{OpTensorScalarPtrBitvec, "TENSOR_SCALAR_PTR_BITVEC", ClassCompute},
	{OpPool, "POOL", ClassNotEmulated},
	{OpTensorReduce, "TENSOR_REDUCE_ARITH", ClassCompute},
	{OpTensorReduceBitvec, "TENSOR_REDUCE_BITVEC", ClassCompute},
	{OpCopy, "COPY", ClassCompute},
	{OpCast, "CAST", ClassCompute},
	{OpReciprocal, "RECIPROCAL", ClassCompute},
	{OpMemset, "MEMSET", ClassCompute},
	{OpRNG, "RNG", ClassNotEmulated},
	{OpBatchNormStats, "BATCH_NORM_STATS", ClassNotEmulated},
	{OpGather, "GATHER", ClassNotEmulated},
	{OpStreamTranspose, "STREAM_TRANSPOSE", ClassCompute},
	{OpIota, "IOTA", ClassCompute},
	{OpCopyPredicated, "COPY_PREDICATED", ClassCompute},
	{OpCastPredicated, "CAST_PREDICATED", ClassCompute},
	{OpSTTArith, "SCALAR_TENSOR_TENSOR_ARITH", ClassCompute},
	{OpSTTBitvec, "SCALAR_TENSOR_TENSOR_BITVEC", ClassCompute},
	{OpTensorTensorScan, "TENSOR_TENSOR_SCAN", ClassCompute},
	{OpDropout, "DROPOUT", ClassNotEmulated},
	{OpJPEGDecode, "JPEG_DECODE", ClassNotEmulated},
	{OpCtrlES, "CTRL_ES", ClassControl},
	{OpHalt, "HALT", ClassControl},
	{OpDrain, "DRAIN", ClassControl},
	{OpNop, "NOP", ClassControl},
	{OpCtrlWR, "CTRL_WR", ClassControl},
	{OpNotify, "NOTIFY", ClassControl},
	{OpCtrlAL, "CTRL_AL", ClassControl},
	{OpCtrlBR, "CTRL_BR", ClassControl},
	{OpTensorLoad, "TENSOR_LOAD", ClassCompute},
	{OpTensorStore, "TENSOR_STORE", ClassNotEmulated},
	{OpCtrlER, "CTRL_ER", ClassNotEmulated},
	{OpPollSem, "CTRL_POLL_SEM", ClassNotEmulated},
	{OpBranchHint, "BRANCH_HINT", ClassControl},
	{OpDMAMemcpy, "DMAMEMCPY", ClassNotEmulated},
	{OpDMAIndirect, "DMA_INDIRECT", ClassNotEmulated},
	{OpDMATranspose, "DMA_TRANSPOSE", ClassNotEmulated},
	{OpSparsityCompress, "SPARSITY_COMPRESS", ClassNotEmulated},
	{OpQuantizeMX, "QUANTIZE_MX", ClassNotEmulated},
	{OpIndirectCopy, "INDIRECT_COPY", ClassNotEmulated},
	{OpExtendedInst, "EXTENDED_INST", ClassNotEmulated},
	{OpDMADirect2D, "DMA_DIRECT2D", ClassPseudo},
}

// realRanges are the value clusters the wiki gives for real opcodes; an
// unnamed value inside one is taken as a real opcode whose effect is not
// emulated (a guess: about half of the 70 real opcodes are unnamed).
// 0x82..0x9F are on the header's opcode roster (59654717735, 59661282351:
// AFFINE_SELECT 0x92, TS_SELECT 0x98, ...): real records, counted rather
// than faulted unless named above.
var realRanges = [][2]Opcode{
	{0x01, 0x0A}, {0x21, 0x30}, {0x41, 0x7F}, {0x81, 0x9F}, {0xA0, 0xBF}, {0xE0, 0xFE},
}

// pseudoRange is the host-only band.
var pseudoRange = [2]Opcode{0xC1, 0xDF}

// opTable is built once from the lists above and never changes.
var opTable = func() (t [256]opInfo) {
	for _, r := range realRanges {
		for op := int(r[0]); op <= int(r[1]); op++ {
			t[op] = opInfo{class: ClassNotEmulated}
		}
	}
	for op := int(pseudoRange[0]); op <= int(pseudoRange[1]); op++ {
		t[op] = opInfo{name: "PSEUDO", class: ClassPseudo}
	}
	for _, n := range named {
		t[n.op] = opInfo{name: n.name, class: n.class}
	}
	t[OpInvalid] = opInfo{name: "INVALID", class: ClassUnknown}
	return t
}()

// Class reports what the sequencer does with op.
func (op Opcode) Class() Class { return opTable[op].class }

func (op Opcode) String() string {
	if n := opTable[op].name; n != "" {
		return fmt.Sprintf("%s(%#02x)", n, uint8(op))
	}
	return fmt.Sprintf("op%#02x", uint8(op))
}
