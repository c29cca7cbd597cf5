package seq

// RecordSize is the width of every record; streams are walked at this
// stride whatever inst_word_len says.
const RecordSize = 64

// WordLen is the only valid inst_word_len: the record's length in 4-byte
// words.
const WordLen = RecordSize / 4

// Byte offsets within a record. Layout lists each with its source.
const (
	offOpcode    = 0x00
	offWordLen   = 0x01
	offDebugCmd  = 0x02
	offDebugHint = 0x03
	offEvents    = 0x04 // wait_mode, wait_idx, update_mode, update_idx, value u32
	offPayload   = 0x0C // the first opcode-specific byte

	// CTRL_ES: the extended events block, with separate wait and update
	// values.
	offESEvents = 0x20

	// CTRL_AL.
	offALOp      = 0x0C
	offALDtype   = 0x0D
	offALSrc1Src = 0x0E // 0 register, 1 immediate
	offALDstType = 0x0F
	offALSrc0Lo  = 0x10
	offALSrc0Hi  = 0x11
	offALSrc1Lo  = 0x12
	offALSrc1Hi  = 0x13
	offALDstLo   = 0x14
	offALDstHi   = 0x15
	offALImm     = 0x18 // 8 bytes

	// CTRL_BR.
	offBRCmp      = 0x0C
	offBRDtype    = 0x0D
	offBRMode     = 0x0E
	offBRImm      = 0x10 // compare immediate, 4 bytes
	offBRReg0     = 0x20
	offBRReg1     = 0x21
	offBRTargetLo = 0x22
	offBRTargetHi = 0x23
	offBRRel      = 0x30 // byte distance from this record, low 32 bits signed

	// CTRL_WR.
	offWRSize  = 0x0C
	offWRAddr  = 0x10 // 8 bytes
	offWRValue = 0x18 // 4 bytes

	// NOTIFY.
	offNotifyHintExt = 0x0C // 2 bytes

	// TENSOR_SCALAR_ARITH (S3D3_TS).
	offTSAccum    = 0x0C // accumulator_cmd, then 3 reserved bytes
	offTSSrc      = 0x10 // TENSOR3D
	offTSInDtype  = 0x20
	offTSOutDtype = 0x21
	offTSChannels = 0x22
	offTSImm0Src  = 0x23
	offTSOp0      = 0x24
	offTSOp1      = 0x25
	offTSReverse  = 0x26
	offTSImm1Src  = 0x27
	offTSImm0     = 0x28 // 4 bytes
	offTSImm1     = 0x2C // 4 bytes
	offTSDst      = 0x30 // TENSOR3D

	// TENSOR_TENSOR (S3S3D3_TT).
	offTTDtypes   = 0x0C // src0 low nibble, src1 high nibble
	offTTOutDtype = 0x0D
	offTTOp       = 0x0E
	offTTChannels = 0x0F
	offTTSrc0     = 0x10 // TENSOR3D
	offTTSrc1     = 0x20 // TENSOR3D
	offTTDst      = 0x30 // TENSOR3D

	// S4D4_TR: COPY, CAST, RECIPROCAL, TENSOR_REDUCE.
	offTRSrc      = 0x0C // TENSOR4D
	offTRInDtype  = 0x20
	offTROutDtype = 0x21
	offTRChannels = 0x22
	offTRNegated  = 0x23
	offTROp       = 0x24
	offTROpDim    = 0x25
	offTRMask     = 0x26
	offTRReserved = 0x27 // 5 bytes
	offTRDst      = 0x2C // TENSOR4D

	// MEMSET (D4_MR).
	offMRReserved = 0x0C // 16 bytes
	offMRCount    = 0x1C // u32
	offMRDtype    = 0x20
	offMRChannels = 0x22
	offMRSerial   = 0x24
	offMRValue    = 0x28 // u32
	offMRDst      = 0x2C // TENSOR4D

	// IOTA (D4_IOTA).
	offIotaData     = 0x0C // DATA4D: base i32, step i16[4], num u16[4]
	offIotaRes0     = 0x20
	offIotaOutDtype = 0x21
	offIotaChannels = 0x22
	offIotaRes1     = 0x23
	offIotaChanMul  = 0x24 // i32
	offIotaRes2     = 0x28 // 4 bytes
	offIotaDst      = 0x2C // TENSOR4D

	// ACTIVATE (S3D3_AC).
	offACImmSrc   = 0x0C
	offACScaleSrc = 0x0D
	offACAccum    = 0x0E
	offACBiasSrc  = 0x0F // IMM_SRC_N: 0 pointer, 1 inline
	offACSrc      = 0x10 // TENSOR3D
	offACDtypes   = 0x20 // input low nibble, bias high nibble
	offACOutDtype = 0x21
	offACChannels = 0x22
	offACFunc     = 0x23
	offACScale    = 0x24 // 4 bytes
	offACBias     = 0x28 // 4 bytes
	offACImm      = 0x2C // 4 bytes
	offACDst      = 0x30 // TENSOR3D

	// ACTIVATE_QUANTIZE (S3D3_AQ).
	offAQQuantScale   = 0x0C // fp32
	offAQSrc          = 0x10 // TENSOR3D
	offAQDtypes       = 0x20 // input low nibble, bias high nibble
	offAQOutDtype     = 0x21
	offAQChannels     = 0x22
	offAQFunc         = 0x23
	offAQDequantScale = 0x24 // fp32
	offAQBias         = 0x28 // ISA address
	offAQQuantZero    = 0x2C // fp32
	offAQDst          = 0x30 // TENSOR3D

	// ACTIVATION_READ_ACCUMULATOR (D1_RD).
	offRDReserved = 0x0C // 16 bytes
	offRDCount    = 0x1C // u32
	offRDDtype    = 0x20
	offRDNegated  = 0x21
	offRDChannels = 0x22
	offRDTail     = 0x23 // 9 reserved bytes
	offRDDst      = 0x2C // TENSOR1D

	// SCALAR_TENSOR_TENSOR, TENSOR_TENSOR_SCAN (S2S2D2_STT).
	offSTTSrc0     = 0x0C // TENSOR2D
	offSTTSrc1     = 0x18 // TENSOR2D
	offSTTOp0      = 0x24
	offSTTOp1      = 0x25
	offSTTReverse  = 0x26
	offSTTImmSrc   = 0x27
	offSTTDtypes   = 0x28 // src0 low nibble, src1 high nibble
	offSTTOutDtype = 0x29
	offSTTChannels = 0x2A
	offSTTImmDtype = 0x2B
	offSTTAccum    = 0x2C
	offSTTReserved = 0x2D // 3 bytes
	offSTTDst      = 0x30 // TENSOR2D
	offSTTImm0     = 0x3C // 4 bytes

	// Inside a TENSOR2D.
	offT2Step = 0x04 // int16[2], elements
	offT2Num  = 0x08 // uint16[2]

	// Inside a TENSOR3D.
	offT3Step = 0x04 // int16[3], elements
	offT3Num  = 0x0A // uint16[3]

	// Inside a TENSOR4D.
	offT4Step = 0x04 // int16[4], elements
	offT4Num  = 0x0C // uint16[4]
)

// Field is one layout fact: where a field sits and how sure we are.
type Field struct {
	Record     string // the record kind, or "all"
	Name       string
	Off, Size  int
	Source     string // wiki page id
	Documented bool   // false: inferred or guessed (docs/isa.md says why)
}

// Layout is every field this package reads, the table docs/isa.md
// renders; a test keeps the two in step.
var Layout = []Field{
	{"all", "opcode", offOpcode, 1, "59660760063", true},
	{"all", "inst_word_len", offWordLen, 1, "59660760063", true},
	{"all", "debug_cmd", offDebugCmd, 1, "59660760063", true},
	{"all", "debug_hint", offDebugHint, 1, "59660760063", true},
	{"all", "wait_mode", offEvents + 0, 1, "59660760063", true},
	{"all", "wait_idx", offEvents + 1, 1, "59660760063", true},
	{"all", "update_mode", offEvents + 2, 1, "59660760063", true},
	{"all", "update_idx", offEvents + 3, 1, "59660760063", true},
	{"all", "semaphore_value", offEvents + 4, 4, "59660760063", true},
	{"CTRL_ES", "ext wait_mode", offESEvents + 0, 1, "60136147227", true},
	{"CTRL_ES", "ext wait_idx", offESEvents + 1, 1, "60136147227", true},
	{"CTRL_ES", "ext update_mode", offESEvents + 2, 1, "60136147227", true},
	{"CTRL_ES", "ext update_idx", offESEvents + 3, 1, "60136147227", true},
	{"CTRL_ES", "sem_wait_value", offESEvents + 4, 4, "60136147227", true},
	{"CTRL_ES", "sem_update_value", offESEvents + 8, 4, "60136147227", true},
	{"CTRL_AL", "op", offALOp, 1, "60136147227", true},
	{"CTRL_AL", "dtype", offALDtype, 1, "60136147227", true},
	{"CTRL_AL", "src1_datasrc", offALSrc1Src, 1, "60136147227", true},
	{"CTRL_AL", "dst_dtype", offALDstType, 1, "59660760063", true},
	{"CTRL_AL", "src0_lo", offALSrc0Lo, 1, "60136147227", true},
	{"CTRL_AL", "src0_hi", offALSrc0Hi, 1, "59660760063", true},
	{"CTRL_AL", "src1_lo", offALSrc1Lo, 1, "59660760063", true},
	{"CTRL_AL", "src1_hi", offALSrc1Hi, 1, "59660760063", true},
	{"CTRL_AL", "dst_lo", offALDstLo, 1, "60136147227", true},
	{"CTRL_AL", "dst_hi", offALDstHi, 1, "59660760063", true},
	{"CTRL_AL", "immediate", offALImm, 8, "60136147227", true},
	{"CTRL_BR", "cmp_op", offBRCmp, 1, "60136147227", true},
	{"CTRL_BR", "dtype", offBRDtype, 1, "60136147227", true},
	{"CTRL_BR", "target_mode", offBRMode, 1, "60136147227", true},
	{"CTRL_BR", "cmp_immediate", offBRImm, 4, "60136147227", true},
	{"CTRL_BR", "cmp_reg0", offBRReg0, 1, "60136147227", true},
	{"CTRL_BR", "cmp_reg1", offBRReg1, 1, "60136147227", false},
	{"CTRL_BR", "target_reg_lo", offBRTargetLo, 1, "60136147227", true},
	{"CTRL_BR", "target_reg_hi", offBRTargetHi, 1, "60136147227", true},
	{"CTRL_BR", "br_immediate", offBRRel, 8, "60136147227", true},
	{"CTRL_WR", "wr_size", offWRSize, 1, "59703506210", true},
	{"CTRL_WR", "csr address", offWRAddr, 8, "59703506210", false},
	{"CTRL_WR", "value", offWRValue, 4, "59703506210", false},
	{"NOTIFY", "debug_hint_extended", offNotifyHintExt, 2, "59803111141", false},
	{"TS_ARITH", "accumulator_cmd", offTSAccum, 1, "59818285506", true},
	{"TS_ARITH", "reserved0", offTSAccum + 1, 3, "59818285506", true},
	{"TS_ARITH", "src_mem_pattern", offTSSrc, 16, "59818285506", true},
	{"TS_ARITH", "in_dtype", offTSInDtype, 1, "59818285506", true},
	{"TS_ARITH", "out_dtype", offTSOutDtype, 1, "59818285506", true},
	{"TS_ARITH", "num_active_channels", offTSChannels, 1, "59818285506", true},
	{"TS_ARITH", "imm0_src", offTSImm0Src, 1, "59818285506", true},
	{"TS_ARITH", "op0", offTSOp0, 1, "59818285506", true},
	{"TS_ARITH", "op1", offTSOp1, 1, "59818285506", true},
	{"TS_ARITH", "reverse_operands", offTSReverse, 1, "59818285506", true},
	{"TS_ARITH", "imm1_src", offTSImm1Src, 1, "59818285506", true},
	{"TS_ARITH", "imm0", offTSImm0, 4, "59818285506", true},
	{"TS_ARITH", "imm1", offTSImm1, 4, "59818285506", true},
	{"TS_ARITH", "dst_mem_pattern", offTSDst, 16, "59818285506", true},
	{"TT", "in0_in1_dtype", offTTDtypes, 1, "59668120065", true},
	{"TT", "out_dtype", offTTOutDtype, 1, "59668120065", true},
	{"TT", "op", offTTOp, 1, "59668120065", true},
	{"TT", "num_active_channels", offTTChannels, 1, "59668120065", true},
	{"TT", "src0_mem_pattern", offTTSrc0, 16, "59668120065", true},
	{"TT", "src1_mem_pattern", offTTSrc1, 16, "59668120065", true},
	{"TT", "dst_mem_pattern", offTTDst, 16, "59668120065", true},
	{"S4D4_TR", "src_mem_pattern", offTRSrc, 20, "59979245665", true},
	{"S4D4_TR", "in_dtype", offTRInDtype, 1, "59979245665", true},
	{"S4D4_TR", "out_dtype", offTROutDtype, 1, "59979245665", true},
	{"S4D4_TR", "num_active_channels", offTRChannels, 1, "59979245665", true},
	{"S4D4_TR", "negated", offTRNegated, 1, "59979245665", true},
	{"S4D4_TR", "op", offTROp, 1, "59979245665", true},
	{"S4D4_TR", "op_dim", offTROpDim, 1, "59979245665", true},
	{"S4D4_TR", "mask_enable", offTRMask, 1, "59979245665", true},
	{"S4D4_TR", "reserved1", offTRReserved, 5, "59979245665", true},
	{"S4D4_TR", "dst_mem_pattern", offTRDst, 20, "59979245665", true},
	{"MEMSET", "reserved0", offMRReserved, 16, "60172155822", true},
	{"MEMSET", "dst_element_count", offMRCount, 4, "60172155822", true},
	{"MEMSET", "dtype", offMRDtype, 1, "60172155822", true},
	{"MEMSET", "num_active_channels", offMRChannels, 1, "60172155822", true},
	{"MEMSET", "serialization_mode", offMRSerial, 1, "60172155822", true},
	{"MEMSET", "set_value", offMRValue, 4, "60172155822", true},
	{"MEMSET", "dst_mem_pattern", offMRDst, 20, "60172155822", true},
	{"IOTA", "src_data_pattern", offIotaData, 20, "59921122295", true},
	{"IOTA", "reserved0", offIotaRes0, 1, "59921122295", true},
	{"IOTA", "out_dtype", offIotaOutDtype, 1, "59921122295", true},
	{"IOTA", "num_active_channels", offIotaChannels, 1, "59921122295", true},
	{"IOTA", "reserved1", offIotaRes1, 1, "59921122295", true},
	{"IOTA", "channel_multiplier", offIotaChanMul, 4, "59921122295", true},
	{"IOTA", "reserved2", offIotaRes2, 4, "59921122295", true},
	{"IOTA", "dst_mem_pattern", offIotaDst, 20, "59921122295", true},
	{"ACTIVATE", "imm_src", offACImmSrc, 1, "59857490485", true},
	{"ACTIVATE", "scale_src", offACScaleSrc, 1, "59857490485", true},
	{"ACTIVATE", "accumulator_cmd", offACAccum, 1, "59857490485", true},
	{"ACTIVATE", "bias_src_n", offACBiasSrc, 1, "59857490485", true},
	{"ACTIVATE", "src_mem_pattern", offACSrc, 16, "59857490485", true},
	{"ACTIVATE", "in_bias_dtype", offACDtypes, 1, "59857490485", true},
	{"ACTIVATE", "out_dtype", offACOutDtype, 1, "59857490485", true},
	{"ACTIVATE", "num_active_channels", offACChannels, 1, "59857490485", true},
	{"ACTIVATE", "activation_func", offACFunc, 1, "59857490485", true},
	{"ACTIVATE", "scale", offACScale, 4, "59857490485", true},
	{"ACTIVATE", "bias", offACBias, 4, "59857490485", true},
	{"ACTIVATE", "imm", offACImm, 4, "59857490485", true},
	{"ACTIVATE", "dst_mem_pattern", offACDst, 16, "59857490485", true},
	{"ACT_QUANT", "quant_scale_value", offAQQuantScale, 4, "59857490485", true},
	{"ACT_QUANT", "src_mem_pattern", offAQSrc, 16, "59857490485", true},
	{"ACT_QUANT", "in_bias_dtype", offAQDtypes, 1, "59857490485", true},
	{"ACT_QUANT", "out_dtype", offAQOutDtype, 1, "59857490485", true},
	{"ACT_QUANT", "num_active_channels", offAQChannels, 1, "59857490485", true},
	{"ACT_QUANT", "activation_func", offAQFunc, 1, "59857490485", true},
	{"ACT_QUANT", "dequant_scale_value", offAQDequantScale, 4, "59857490485", true},
	{"ACT_QUANT", "bias_addr", offAQBias, 4, "59857490485", true},
	{"ACT_QUANT", "quant_zero_value", offAQQuantZero, 4, "59857490485", true},
	{"ACT_QUANT", "dst_mem_pattern", offAQDst, 16, "59857490485", true},
	{"READ_ACC", "reserved", offRDReserved, 16, "59857490485", true},
	{"READ_ACC", "dst_element_count", offRDCount, 4, "59857490485", true},
	{"READ_ACC", "dtype", offRDDtype, 1, "59857490485", true},
	{"READ_ACC", "negated", offRDNegated, 1, "59857490485", true},
	{"READ_ACC", "num_active_channels", offRDChannels, 1, "59857490485", true},
	{"READ_ACC", "reserved1", offRDTail, 9, "59857490485", true},
	{"READ_ACC", "dst_mem_pattern", offRDDst, 8, "59857490485", false},
	{"STT", "src0_mem_pattern", offSTTSrc0, 12, "59693623482", true},
	{"STT", "src1_mem_pattern", offSTTSrc1, 12, "59693623482", true},
	{"STT", "op0", offSTTOp0, 1, "59693623482", true},
	{"STT", "op1", offSTTOp1, 1, "59693623482", true},
	{"STT", "reverse_operands", offSTTReverse, 1, "59693623482", true},
	{"STT", "imm0_src", offSTTImmSrc, 1, "59693623482", true},
	{"STT", "in0_in1_dtype", offSTTDtypes, 1, "59693623482", true},
	{"STT", "out_dtype", offSTTOutDtype, 1, "59693623482", true},
	{"STT", "num_active_channels", offSTTChannels, 1, "59693623482", true},
	{"STT", "imm0_dtype", offSTTImmDtype, 1, "59693623482", true},
	{"STT", "accumulator_cmd", offSTTAccum, 1, "59693623482", true},
	{"STT", "reserved", offSTTReserved, 3, "59693623482", true},
	{"STT", "dst_mem_pattern", offSTTDst, 12, "59693623482", true},
	{"STT", "imm0", offSTTImm0, 4, "59693623482", true},
	{"TENSOR2D", "start_addr", 0, 4, "59693623482", true},
	{"TENSOR2D", "step_elem", offT2Step, 4, "59693623482", true},
	{"TENSOR2D", "num_elem", offT2Num, 4, "59693623482", true},
	{"TENSOR3D", "start_addr", 0, 4, "59660760063", true},
	{"TENSOR3D", "step_elem", offT3Step, 6, "59660760063", true},
	{"TENSOR3D", "num_elem", offT3Num, 6, "59660760063", true},
	{"TENSOR4D", "start_addr", 0, 4, "59979245665", true},
	{"TENSOR4D", "step_elem", offT4Step, 8, "59979245665", true},
	{"TENSOR4D", "num_elem", offT4Num, 8, "59979245665", true},
}
